"""What the share-group handlers call (KIP-932): the share groups a client joins, fetches from and
acknowledges in, and an admin describes, alters and deletes the offsets of (ShareGroupService,
broker/groups/share/share_groups.py, in front of the share coordinator, its share-partitions and
sessions and the offsets admin); and the share-partition states one broker asks another's share
coordinator to read and write (ShareStateService, broker/groups/share/state_coordinator.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable
from typing import Protocol

from replica.readable_partition import ReadablePartition
from wire.error_codes import ErrorCode

from broker.groups.share.share_coordinator import ShareHeartbeatResult
from broker.groups.share.share_group import ShareGroup
from broker.groups.share.share_group_admin import Refused, TopicResult
from broker.groups.share.share_partition import SharePartition, StateRange
from broker.groups.share.share_partitions import Acquired
from broker.groups.share.share_sessions import ShareSession
from broker.groups.share.state_coordinator import StateAnswer
from broker.groups.share.state_log import Key
from broker.settings.group_configs import GroupShareConfig


class ShareGroupService(Protocol):
    # --- the checks every share-group API makes ------------------------------------------------

    def coordinator_error(self, group_id: str) -> ErrorCode | None:
        """NOT_COORDINATOR when another broker coordinates the group, else None."""

    def other_group_kind(self, group_id: str) -> str | None:
        """"classic", "consumer" or "streams" when a group of that kind holds the id, else None."""

    def group(self, group_id: str) -> ShareGroup | None:
        """The share group this broker coordinates under `group_id`, if there is one."""

    def config_of(self, group_id: str) -> GroupShareConfig:
        """The group's share.* configs: its own overrides over the broker's values."""

    # --- membership (ShareGroupHeartbeat) ------------------------------------------------------

    async def heartbeat(self, group_id: str, member_id: str, member_epoch: int, subscribed: tuple[str, ...] | None,
                        rack_id: str | None, client_id: str, client_host: str) -> ShareHeartbeatResult:
        """Join, heartbeat or (epoch -1) leave; the group's records written before the answer."""

    def is_unknown_member(self, group_id: str, member_id: str) -> bool:
        """Whether this broker coordinates the group and it has no such member."""

    # --- share sessions (ShareFetch, ShareAcknowledge) -----------------------------------------

    def session_for_fetch(self, group_id: str, member_id: str, epoch: int,
                          connection: Hashable | None) -> ShareSession:
        """The session a ShareFetch at `epoch` works on (epoch 0 opens one on `connection`);
        raises SessionRefused."""

    def session_for_acknowledge(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The session a ShareAcknowledge at `epoch` works on; raises SessionRefused."""

    async def close_session(self, session: ShareSession) -> None:
        """The session ends and what its member holds in it is released, the release stored."""

    # --- share-partitions ----------------------------------------------------------------------

    async def load(self, key: Key, partition: ReadablePartition) -> SharePartition:
        """The share-partition of `key` over its log `partition` (led here), its state read
        first if need be; raises ShareStateUnavailable."""

    def acquire(self, key: Key, partition: ReadablePartition, member: str, max_records: int, max_bytes: int,
                now_ms: int, record_limit: bool) -> Acquired:
        """Records for `member` from the loaded share-partition's log (whole batches, or with
        `record_limit` at most max_records); raises what partition.read raises."""

    async def acknowledge(self, key: Key, partition: ReadablePartition, member: str,
                          batches: list[tuple[int, int, tuple[int, ...]]], now_ms: int) -> tuple[ErrorCode, str | None]:
        """(first, last, acknowledge types) batches applied and the state written: (error, message);
        raises ShareStateUnavailable."""

    async def persist(self, key: Key) -> None:
        """The share-partition's state stored as it is now; raises ShareStateUnavailable."""

    def next_deadline_ms(self, keys: Iterable[Key]) -> int | None:
        """The first time an acquisition lock of these share-partitions runs out."""

    def add_waiter(self, fut: asyncio.Future[None]) -> None:
        """Complete `fut` when some member releases records (a share fetch's long poll)."""

    def discard_waiter(self, fut: asyncio.Future[None]) -> None: ...

    # --- offsets admin (Describe / Alter / DeleteShareGroupOffsets) ----------------------------

    async def describe_offsets(self, group_id: str, wanted: list[tuple[str, list[int]]] | None) -> list[TopicResult]:
        """Start offsets and lag of (topic, partitions) `wanted`, or (None) of every partition with state."""

    async def alter_offsets(self, group_id: str,
                            wanted: list[tuple[str, list[tuple[int, int]]]]) -> Refused | list[TopicResult]:
        """Each (partition, start offset) written as the share-partition's new state."""

    async def delete_offsets(self, group_id: str, names: list[str]) -> Refused | list[TopicResult]:
        """Every partition's state of these topics deleted."""


class ShareStateService(Protocol):
    """The share coordinator's answers for the share-partitions whose `__share_group_state`
    partition this broker leads (NOT_COORDINATOR for any other)."""

    async def read(self, key: Key, leader_epoch: int) -> StateAnswer:
        """The kept state, recording the reader's leader epoch (an older one is fenced after)."""

    async def write(self, key: Key, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: tuple[StateRange, ...]) -> StateAnswer:
        """The batches laid over the kept state, written before the answer."""

    async def initialize(self, key: Key, state_epoch: int, start_offset: int) -> StateAnswer:
        """A new state at a higher state epoch: the start offset, nothing in flight."""

    async def summary(self, key: Key) -> StateAnswer:
        """The kept state, recording nothing."""

    async def delete(self, key: Key) -> StateAnswer:
        """The key's state gone (a tombstone written first)."""
