"""The share coordinator (Kafka's ShareCoordinatorShard): keeps the state of the share-partitions
whose `__share_group_state` partition this broker leads, and answers ReadShareGroupState,
WriteShareGroupState, InitializeShareGroupState, ReadShareGroupStateSummary and
DeleteShareGroupState for them.

A state partition is loaded the first time it is asked about while led here at a leader epoch
not loaded yet: its whole log is replayed (the last value per key wins) on the event loop without
awaiting, so no request sees it half loaded; a partition led again after another broker led it
is loaded afresh. A key whose partition is not led here is NOT_COORDINATOR.

Fencing as Kafka's: a read or write whose leader epoch is below the last one recorded for the key
is FENCED_LEADER_EPOCH (a deposed share-partition leader); a write whose state epoch is below the
stored one, or an initialize whose state epoch is not above it, FENCED_STATE_EPOCH. A read
records its leader epoch (in memory, as Kafka's does). A write's batches are laid over the stored
ones (state_log.overlay) and the whole result written as one record before it is answered.
A summary (the group coordinator's read, for an admin) records no leader epoch and fences
nothing; a delete writes a tombstone and forgets the key's leader epoch, as Kafka's deleteState.
"""

from __future__ import annotations

import logging
import uuid
from typing import NamedTuple

from wire.error_codes import ErrorCode

from replica.partition import now_ms

from broker.groups.share import state_log
from broker.groups.share.keyed_locks import KeyedLocks
from broker.groups.share.share_partition import StateRange
from broker.coordinator.internal_topic_log import coordinator_error
from broker.groups.share.state_store import ShareStateStore

log = logging.getLogger(__name__)
Key = state_log.Key
UNINITIALIZED = -1  # the start offset a read answers for a share-partition with no state


class StateAnswer(NamedTuple):
    error: ErrorCode
    message: str | None = None
    state: state_log.ShareState | None = None
    summary: state_log.StateSummary | None = None  # a remote coordinator's ReadShareGroupStateSummary


class ShareStateCoordinator:
    def __init__(self, broker, store: ShareStateStore) -> None:
        self._broker = broker
        self._store = store
        self._loaded: dict[int, int] = {}  # state partition -> the leader epoch it was loaded at
        self._states: dict[Key, state_log.ShareState] = {}
        self._read_epochs: dict[Key, int] = {}  # leader epochs reads recorded
        self._locks: KeyedLocks[Key] = KeyedLocks()

    async def read(self, key: Key, leader_epoch: int) -> StateAnswer:
        refused = await self._refusal(key)
        if refused is not None:
            return refused
        if leader_epoch < self._leader_epoch(key):
            return StateAnswer(ErrorCode.fenced_leader_epoch, f"leader epoch {leader_epoch} is not the latest")
        self._read_epochs[key] = max(leader_epoch, self._read_epochs.get(key, -1))
        state = self._states.get(key)
        return StateAnswer(ErrorCode.none, None, state or state_log.ShareState(0, -1, UNINITIALIZED, ()))

    async def write(self, key: Key, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: tuple[StateRange, ...]) -> StateAnswer:
        refused = await self._refusal(key)
        if refused is not None:
            return refused
        async with self._locks.hold(key):
            kept = self._states.get(key)
            if leader_epoch < self._leader_epoch(key):
                return StateAnswer(ErrorCode.fenced_leader_epoch, f"leader epoch {leader_epoch} is not the latest")
            if kept is not None and state_epoch < kept.state_epoch:
                return StateAnswer(ErrorCode.fenced_state_epoch, f"state epoch {state_epoch} is below {kept.state_epoch}")
            start = start_offset if start_offset >= 0 else (kept.start_offset if kept else 0)
            now = now_ms()
            new = state_log.ShareState(
                max(state_epoch, kept.state_epoch if kept else 0), max(leader_epoch, kept.leader_epoch if kept else -1),
                start, state_log.overlay(kept.batches if kept else (), batches, start),
                (kept.snapshot_epoch + 1) if kept else 0, kept.create_ms if kept else now, now)
            return await self._store_state(key, new)

    async def initialize(self, key: Key, state_epoch: int, start_offset: int) -> StateAnswer:
        refused = await self._refusal(key)
        if refused is not None:
            return refused
        async with self._locks.hold(key):
            kept = self._states.get(key)
            if kept is not None and state_epoch <= kept.state_epoch:
                return StateAnswer(ErrorCode.fenced_state_epoch, f"state epoch {state_epoch} is not above {kept.state_epoch}")
            now = now_ms()
            new = state_log.ShareState(state_epoch, -1, start_offset, (), (kept.snapshot_epoch + 1) if kept else 0,
                                       now, now)
            return await self._store_state(key, new)

    async def summary(self, key: Key) -> StateAnswer:
        """The kept state (start offset -1: none), as a read answers it, recording nothing."""
        refused = await self._refusal(key)
        if refused is not None:
            return refused
        return StateAnswer(ErrorCode.none, None, self._states.get(key) or state_log.ShareState(0, -1, UNINITIALIZED, ()))

    async def delete(self, key: Key) -> StateAnswer:
        """The key's state gone (a tombstone written first); a key with none answers none."""
        refused = await self._refusal(key)
        if refused is not None:
            return refused
        async with self._locks.hold(key):
            if key not in self._states:
                return StateAnswer(ErrorCode.none)
            answer = await self._store_state(key, None)
            if answer.error is ErrorCode.none:
                self._read_epochs.pop(key, None)
            return answer

    # --- inside -----------------------------------------------------------------------------------

    def _leader_epoch(self, key: Key) -> int:
        kept = self._states.get(key)
        return max(self._read_epochs.get(key, -1), kept.leader_epoch if kept else -1)

    async def _store_state(self, key: Key, new: state_log.ShareState | None) -> StateAnswer:
        """Write the key's new state (None: delete it), then keep it."""
        partition = self._led_partition(key)
        if partition is None:
            return StateAnswer(ErrorCode.not_coordinator)
        code = await self._store.append(partition, key, new)
        if code is not ErrorCode.none:
            log.warning("%s: writing the state of %s failed: %s", state_log.TOPIC, key, code.name)
            return StateAnswer(coordinator_error(code), f"the state could not be written: {code.name}")
        if new is None:
            self._states.pop(key, None)
        else:
            self._states[key] = new
        return StateAnswer(ErrorCode.none, None, new)

    async def _refusal(self, key: Key) -> StateAnswer | None:
        """Why this broker does not answer for `key` (None: it does), loading its partition first."""
        group_id, topic_id, partition = key
        if not group_id or topic_id is None or topic_id == uuid.UUID(int=0) or partition < 0:
            return StateAnswer(ErrorCode.invalid_request, "GroupId, TopicId and a partition of at least 0 must be set.")
        topic = await self._store.ensure_topic()
        if topic is None:
            return StateAnswer(ErrorCode.coordinator_not_available)
        led = self._led_partition(key)
        if led is None:
            return StateAnswer(ErrorCode.not_coordinator)
        if self._loaded.get(led.index) != led.leader_epoch:
            self._load(led)
        data = self._broker.topics.get_by_id(topic_id)
        if data is None or partition >= len(data.partitions):
            return StateAnswer(ErrorCode.unknown_topic_or_partition, f"topic {topic_id} partition {partition} is unknown")
        return None

    def _led_partition(self, key: Key):
        topic = self._store.topic()
        if topic is None:
            return None
        index = state_log.partition_for(state_log.coordinator_key(key), len(topic.partitions))
        partition = topic.partitions[index]
        if partition is None or not partition.is_leader:
            return None
        return partition

    def _load(self, partition) -> None:
        index = partition.index
        topic = self._store.topic()
        for key in [k for k in self._states
                    if state_log.partition_for(state_log.coordinator_key(k), len(topic.partitions)) == index]:
            del self._states[key]
            self._read_epochs.pop(key, None)
        loaded = 0
        for key, state in self._store.replay_partition(partition):
            loaded += 1
            if state is None:
                self._states.pop(key, None)
            else:
                self._states[key] = state
        self._loaded[index] = partition.leader_epoch
        log.info("coordinating the share-partition states of %s-%d (leader epoch %d): %d records replayed",
                 state_log.TOPIC, index, partition.leader_epoch, loaded)
