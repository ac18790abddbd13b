"""How a group kind's coordinator writes its own records (the classic group's metadata, the
consumer, streams and share groups' records, Kafka's keys and values): as an operation in the
turn of its group's `__consumer_offsets` partition on the coordinator runtime, so they reach
the log in the same queue, the same batches and the same write path as the committed offsets.

The runtime replays them into the shard (group_loading.py hands each to its group kind's
replay, as Kafka's coordinator replays a consumer group's records) before it writes them, and
puts back what they changed if the write fails. A classic group's records are the exception, as
in Kafka (CoordinatorResult with replayRecords=false): its coordinator changes the group itself
(its members park their JoinGroup / SyncGroup on it) and undoes the change on the error. `write`
answers the coordinator's error for the log's (internal_topic_log.coordinator_error), or
NOT_COORDINATOR when the partition is not led here.
"""

from __future__ import annotations

import logging
from typing import Awaitable, Callable, NamedTuple, Sequence

from wire.error_codes import ErrorCode
from broker.coordinator.runtime import CoordinatorError, Outcome
from broker.groups.offsets_log import KeyValue, Written

log = logging.getLogger(__name__)


class WriteRecords(NamedTuple):
    group_id: str
    records: tuple[KeyValue, ...]


Submit = Callable[[str, WriteRecords], Awaitable[object]]  # GroupLoading.submit


class GroupWrites:
    def __init__(self) -> None:
        self._submit: Submit | None = None

    def route(self, submit: Submit) -> None:
        """Made by group_loading.py, after the coordinators that write through here."""
        self._submit = submit

    async def write(self, group_id: str, records: Sequence[tuple[bytes, bytes | None]]) -> ErrorCode:
        """ErrorCode.none once the records are written (as durable as the topic asks, on every
        in-sync replica), else the coordinator's error; nothing to write answers at once."""
        if not records:
            return ErrorCode.none
        assert self._submit is not None, "the groups' records are written once group_loading.py routes them"
        try:
            await self._submit(group_id, WriteRecords(group_id, tuple(KeyValue(k, v) for k, v in records)))
        except CoordinatorError as exc:
            log.info("group %s: writing %d records failed: %s", group_id, len(records), exc)
            return exc.code
        return ErrorCode.none


def handle(op: WriteRecords) -> Outcome[Written, object]:
    """The operation's turn: its records, replayed (group_loading.py) and written."""
    return Outcome(op.records, None)
