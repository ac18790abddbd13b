"""The share coordinator (Kafka's ShareCoordinatorService): answers ReadShareGroupState,
WriteShareGroupState, InitializeShareGroupState, ReadShareGroupStateSummary and
DeleteShareGroupState for the share-partitions whose `__share_group_state` partition this
broker leads.

Each request is checked here (its key well formed, the topic made on first use, the key's
partition led here, the share-partition's topic known), then runs as an operation of the key's
partition in the coordinator runtime (broker/coordinator/runtime.py), on that partition's shard
(state_shard.py): the runtime loads a partition the first time this broker leads it and is asked
about it, or when the metadata says it leads it (`on_metadata`), and unloads it when it stops
leading it. A key whose partition is not led here is NOT_COORDINATOR; a state that could not be
written answers the coordinator's error for the log's (internal_topic_log.coordinator_error).
"""

from __future__ import annotations

import uuid

from wire.error_codes import ErrorCode

from broker.api.topic_lookup import TopicLookup
from broker.coordinator.clock import Clock
from broker.coordinator.runtime import CoordinatorError, CoordinatorRuntime
from broker.groups.share import state_log
from broker.groups.share.share_partition import StateRange
from broker.groups.share.state_shard import Delete, Initialize, Op, Read, Record, ShareStateShard, Summary, Write
from broker.groups.share.state_shard import StateAnswer as StateAnswer  # what the handlers are answered
from broker.groups.share.state_store import ShareStateStore

Key = state_log.Key


class ShareStateCoordinator:
    def __init__(self, topics: TopicLookup, store: ShareStateStore, clock: Clock | None = None) -> None:
        """`topics`: the share-partitions' topics, which a request's must name."""
        self._topics = topics
        self._store = store
        self._runtime: CoordinatorRuntime[Record, Op, StateAnswer] = CoordinatorRuntime(
            store, ShareStateShard, store, clock)

    async def read(self, key: Key, leader_epoch: int) -> StateAnswer:
        return await self._run(key, Read(key, leader_epoch))

    async def write(self, key: Key, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: tuple[StateRange, ...]) -> StateAnswer:
        return await self._run(key, Write(key, state_epoch, leader_epoch, start_offset, batches))

    async def initialize(self, key: Key, state_epoch: int, start_offset: int) -> StateAnswer:
        return await self._run(key, Initialize(key, state_epoch, start_offset))

    async def summary(self, key: Key) -> StateAnswer:
        """The kept state (start offset -1: none), as a read answers it, recording nothing."""
        return await self._run(key, Summary(key))

    async def delete(self, key: Key) -> StateAnswer:
        """The key's state gone (a tombstone written first); a key with none answers none."""
        return await self._run(key, Delete(key))

    async def on_metadata(self, image: object, change: object) -> None:
        """A ClusterMetadata listener: load the partitions led here, unload the others."""
        self._runtime.sync()

    # --- inside -----------------------------------------------------------------------------------

    async def _run(self, key: Key, op: Op) -> StateAnswer:
        group_id, topic_id, partition = key
        if not group_id or topic_id is None or topic_id == uuid.UUID(int=0) or partition < 0:
            return StateAnswer(ErrorCode.invalid_request, "GroupId, TopicId and a partition of at least 0 must be set.")
        topic = await self._store.ensure_topic()
        if topic is None:
            return StateAnswer(ErrorCode.coordinator_not_available)
        index = state_log.partition_for(state_log.coordinator_key(key), len(topic.partitions))
        if self._runtime.shard(index) is None:
            return StateAnswer(ErrorCode.not_coordinator)
        data = self._topics.get_by_id(topic_id)
        if data is None or partition >= len(data.partitions):
            return StateAnswer(ErrorCode.unknown_topic_or_partition, f"topic {topic_id} partition {partition} is unknown")
        try:
            return await self._runtime.submit(index, op)
        except CoordinatorError as exc:
            return StateAnswer(exc.code, exc.message)
