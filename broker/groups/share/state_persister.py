"""How a share-partition's leader reads and writes its state (Kafka's DefaultStatePersister): at the
share coordinator of its key, the leader of the key's `__share_group_state` partition.

When that leader is this broker the coordinator is called in-process; otherwise by
ReadShareGroupState v0 / WriteShareGroupState v0 / InitializeShareGroupState v0 (and, for the
group coordinator's admin calls, ReadShareGroupStateSummary v1 / DeleteShareGroupState v0) on
the other broker's inter-broker listener (one connection per broker, peer_connections.py). An answer saying
the coordinator moved or is not ready (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS, a lost connection) is retried, the coordinator looked up again, for
up to RETRY_FOR_S; any other error, or still none after that, raises ShareStateUnavailable with
the code a share-partition answers for it (Kafka's SharePartition maps them alike).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from wire.error_codes import ErrorCode
from replica.broker_connection import ConnectionFailed
from wire.protocol import request_class

from broker.cluster.view import ClusterView
from broker.groups.share import state_log
from broker.groups.share.share_partition import RecordState, StateRange
from broker.groups.share.state_coordinator import ShareStateCoordinator
from broker.groups.share.state_shard import StateAnswer
from broker.groups.share.state_store import ShareStateStore
from broker.cluster.peer_connections import PeerConnections

if TYPE_CHECKING:  # the etcd client it brings is loaded only by a clustered broker
    from broker.cluster.member import ClusterMember

log = logging.getLogger(__name__)

INITIALIZE_KEY, READ_KEY, WRITE_KEY, DELETE_KEY, SUMMARY_KEY = 83, 84, 85, 86, 87
_TOPIC_ENTRY = {INITIALIZE_KEY: "InitializeStateData", READ_KEY: "ReadStateData", WRITE_KEY: "WriteStateData",
                DELETE_KEY: "DeleteStateData", SUMMARY_KEY: "ReadStateSummaryData"}
RETRY_FOR_S = 10.0
REQUEST_TIMEOUT_MS = 15_000  # more than the coordinator's wait for its record's replication (5 s)
_MOVED = frozenset({ErrorCode.not_coordinator, ErrorCode.coordinator_not_available,
                    ErrorCode.coordinator_load_in_progress})
# The coordinator's answer -> the share-partition's (Kafka's SharePartition.fetchPersisterError).
_PARTITION_ERRORS = {**dict.fromkeys(_MOVED, ErrorCode.coordinator_not_available),
                     ErrorCode.fenced_leader_epoch: ErrorCode.not_leader_or_follower,
                     ErrorCode.fenced_state_epoch: ErrorCode.fenced_state_epoch,
                     ErrorCode.unknown_topic_or_partition: ErrorCode.unknown_topic_or_partition}

# A request's entry for the key's partition, by the request class of its API version (a kio class).
PartitionFields = Callable[[Any], dict[str, Any]]
LocalCall = Callable[[ShareStateCoordinator], Awaitable[StateAnswer]]  # the same request, in-process


class ShareStateUnavailable(Exception):
    """The state could not be read or written: `error` is what the share-partition answers."""

    def __init__(self, coordinator_error: ErrorCode, message: str | None) -> None:
        super().__init__(f"the share coordinator answered {coordinator_error.name}: {message or ''}".rstrip(": "))
        self.error = _PARTITION_ERRORS.get(coordinator_error, ErrorCode.unknown_server_error)
        self.coordinator_error = coordinator_error  # what an admin call answers


class ShareStatePersister:
    def __init__(self, view: ClusterView, node_id: int, store: ShareStateStore, coordinator: ShareStateCoordinator,
                 member: ClusterMember | None) -> None:
        """`view`: who leads a key's `__share_group_state` partition, `node_id` this broker's."""
        self._view = view
        self._node_id = node_id
        self._store = store
        self._coordinator = coordinator
        self._peers = PeerConnections(member, node_id, "share-state", REQUEST_TIMEOUT_MS) \
            if member is not None else None

    async def read(self, key: state_log.Key, leader_epoch: int) -> state_log.ShareState:
        """The stored state (start offset -1: none yet); raises ShareStateUnavailable."""
        answer = await self._call(key, lambda c: c.read(key, leader_epoch), READ_KEY, 0,
                                  lambda cls: {"partition": key[2], "leader_epoch": leader_epoch})
        assert answer.state is not None  # a read answered without error holds the state, local or remote
        return answer.state

    async def write(self, key: state_log.Key, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: tuple[StateRange, ...]) -> None:
        """Raises ShareStateUnavailable when it was not stored."""
        def partition(cls: Any) -> dict[str, Any]:
            batch_cls = _nested(cls, "StateBatch")
            return {"partition": key[2], "state_epoch": state_epoch, "leader_epoch": leader_epoch,
                    "start_offset": start_offset, "state_batches": tuple(
                        batch_cls(first_offset=b.first, last_offset=b.last, delivery_state=int(b.state),
                             delivery_count=b.delivery_count) for b in batches)}
        await self._call(key, lambda c: c.write(key, state_epoch, leader_epoch, start_offset, batches),
                         WRITE_KEY, 0, partition)

    async def initialize(self, key: state_log.Key, state_epoch: int, start_offset: int) -> None:
        await self._call(key, lambda c: c.initialize(key, state_epoch, start_offset), INITIALIZE_KEY, 0,
                         lambda cls: {"partition": key[2], "state_epoch": state_epoch, "start_offset": start_offset})

    async def read_summary(self, key: state_log.Key) -> state_log.StateSummary:
        """The stored state's summary (start offset -1: none), fencing nothing; raises ShareStateUnavailable."""
        answer = await self._call(key, lambda c: c.summary(key), SUMMARY_KEY, 1,
                                  lambda cls: {"partition": key[2], "leader_epoch": 0})
        if answer.summary is not None:  # a remote coordinator's
            return answer.summary
        assert answer.state is not None  # the local coordinator answers the state itself
        return state_log.summary_of(answer.state)

    async def delete(self, key: state_log.Key) -> None:
        """The stored state gone; raises ShareStateUnavailable when it was not deleted."""
        await self._call(key, lambda c: c.delete(key), DELETE_KEY, 0, lambda cls: {"partition": key[2]})

    async def close(self) -> None:
        if self._peers is not None:
            await self._peers.close()

    # --- inside -----------------------------------------------------------------------------------

    async def _call(self, key: state_log.Key, local: LocalCall, api_key: int, version: int,
                    partition_fields: PartitionFields) -> StateAnswer:
        deadline = time.monotonic() + RETRY_FOR_S
        backoff = 0.05
        while True:
            node = await self._coordinator_node(key)
            if node is None:
                answer = StateAnswer(ErrorCode.coordinator_not_available)
            elif node == self._node_id or self._peers is None:
                answer = await local(self._coordinator)
            else:
                answer = await self._remote(node, key, api_key, version, partition_fields)
            if answer.error is ErrorCode.none:
                return answer
            if answer.error not in _MOVED or time.monotonic() + backoff > deadline:
                raise ShareStateUnavailable(answer.error, answer.message)
            await asyncio.sleep(backoff)  # a new coordinator is being elected or loading
            backoff = min(backoff * 2, 1.0)

    async def _coordinator_node(self, key: state_log.Key) -> int | None:
        topic = await self._store.ensure_topic()
        if topic is None:
            return None
        index = state_log.partition_for(state_log.coordinator_key(key), len(topic.partitions))
        placement = self._view.placement(state_log.TOPIC, index, topic.partitions[index])
        return placement.leader if placement is not None and placement.leader >= 0 else None

    async def _remote(self, node: int, key: state_log.Key, api_key: int, version: int,
                      partition_fields: PartitionFields) -> StateAnswer:
        connection = self._peers.to(node) if self._peers is not None else None
        if connection is None:
            return StateAnswer(ErrorCode.coordinator_not_available)
        cls = request_class(api_key, version)
        topic_cls, part_cls = _nested(cls, _TOPIC_ENTRY[api_key]), _nested(cls, "PartitionData")
        request = cls(group_id=key[0], topics=(topic_cls(topic_id=key[1], partitions=(
            part_cls(**partition_fields(cls)),)),))
        try:
            response = await connection.request(request)
        except ConnectionFailed as exc:
            log.info("share-state request %d to broker %d failed: %s", api_key, node, exc)
            return StateAnswer(ErrorCode.coordinator_not_available, str(exc))
        for t in response.results:
            for p in t.partitions:
                if p.partition == key[2]:
                    return _answer(api_key, p)
        return StateAnswer(ErrorCode.unknown_server_error, "the answer did not name the partition")


def _nested(cls: Any, name: str) -> Any:
    """A nested entity class of the request's schema version (its module holds them all)."""
    return getattr(sys.modules[cls.__module__], name)


def _answer(api_key: int, p: Any) -> StateAnswer:
    code = p.error_code
    if api_key == SUMMARY_KEY and code is ErrorCode.none:
        return StateAnswer(ErrorCode.none, None, None, state_log.StateSummary(
            p.state_epoch, p.leader_epoch, p.start_offset, p.delivery_complete_count))
    if api_key != READ_KEY or code is not ErrorCode.none:
        return StateAnswer(code, p.error_message)
    batches = tuple(StateRange(b.first_offset, b.last_offset, RecordState(b.delivery_state), b.delivery_count)
                    for b in p.state_batches)
    return StateAnswer(ErrorCode.none, None, state_log.ShareState(p.state_epoch, -1, p.start_offset, batches))
