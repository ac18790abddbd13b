"""Which groups this broker coordinates: those of the `__consumer_offsets` partitions it leads,
each a shard of the coordinator runtime (broker/coordinator/runtime.py).

Kafka's GroupMetadataManager keeps `ownedPartitions`; its onElection loads a partition's
groups and offsets from the log when the broker becomes that partition's leader, and its
onResignation unloads them when leadership moves away. This is the same, driven by metadata:
after every image the cluster member applies (cluster_member.py makes each hosted partition
leader or follower first, as the earlier listener), the coordinator runtime
(broker/coordinator/runtime.py) compares the partitions this broker leads with the ones it has
loaded, and what loading and unloading mean for groups is here, as a shard of one partition:

- newly led: the partition's records, from its log start to its log end (the new leader's
  whole log is the partition's truth: what lies above the HW is what the followers will
  copy), go through the consumer, share and streams groups' replays into the classic
  coordinator's load (offsets_replay.load), then its groups are coordinated here;
- no longer led (a follower now, not hosted, or the topic deleted): unload its groups, whose
  parked JoinGroup / SyncGroup requests get NOT_COORDINATOR.

A load runs on the event loop without awaiting, so no request ever sees a partition half
loaded (Kafka needs COORDINATOR_LOAD_IN_PROGRESS for that window; this broker has none); the
runtime compares the role only, not the epoch (runtime.py says why).

What a shard handles in its partition's turn: the groups' timers (group_timers.py: a `Fire`; the
runtime cancels them all on unload), the committed offsets' operations (offset_ops.py:
commits, offset deletions, a classic group's deletion), whose records the runtime replays here
and writes through the write path (OffsetsStore.append_records), and the classic, consumer,
streams and share groups' own records (group_writes.py: `WriteRecords`), which the runtime
replays here, each into its group kind (`replay_written`: a classic group's record is the
classic coordinator's, applied by it already, as in Kafka), then writes. A write that fails puts
back the groups and offsets its replayed records changed (each kind's replay saves them in the
runtime's undo log); the classic coordinator undoes its own change on the error.
A transaction's offsets (txn_offsets.py: `TxnCommit`) are a transactional write of the runtime:
its records are the producer's transactional batch (OffsetsStore.append_transactional), alone.

A single broker leads every partition of the topic from the start: it replays the whole topic
once, at start-up, and coordinates every group, also before the topic exists
(`local_partitions` stays None); the first time the topic is there (made on first use) its
partitions are loaded, before anything is written to them.
"""

from __future__ import annotations

import logging

from wire.error_codes import ErrorCode

from replica.partition import Partition
from broker.api.topic_lookup import TopicLookup
from broker.coordinator.runtime import CoordinatorError, CoordinatorRuntime, Outcome, ShardContext, TxnWrite
from broker.coordinator.shard_timer import ShardTimer
from broker.coordinator.undo import UndoLog
from broker.groups import offsets_replay
from broker.groups import offsets_log
from broker.groups.coordinator import GroupCoordinator
from broker.groups import group_writes
from broker.groups.group_timers import Fire, GroupTimers
from broker.groups.group_writes import WriteRecords
from broker.groups.offset_ops import OffsetOp, OffsetOps
from broker.groups.offsets_log import KeyValue, Written
from broker.groups.offsets_store import OffsetsStore, StoredMarker, StoredRecord
from broker.groups.txn_offsets import TxnCommit
from broker.groups.consumer.coordinator import ConsumerGroupCoordinator
from broker.groups.consumer import records as consumer_records
from broker.groups.consumer import replay as consumer_replay
from broker.groups.share import share_group_records as share_records
from broker.groups.share import share_group_replay
from broker.groups.streams import records as streams_records
from broker.groups.streams import replay as streams_replay
from broker.groups.share.share_coordinator import ShareGroupCoordinator
from broker.groups.streams.coordinator import StreamsGroupCoordinator

log = logging.getLogger(__name__)


Record = StoredRecord | StoredMarker | Written  # read from the log | written by an operation
Op = Fire | OffsetOp | WriteRecords


class GroupLoading:
    def __init__(self, coordinator: GroupCoordinator, consumer_groups: ConsumerGroupCoordinator,
                 share_groups: ShareGroupCoordinator, store: OffsetsStore, cluster: bool,
                 streams_groups: StreamsGroupCoordinator, timers: GroupTimers, topics: TopicLookup) -> None:
        self.coordinator = coordinator
        self.consumer_groups = consumer_groups  # KIP-848 groups: their records share the partitions
        self.share_groups = share_groups  # KIP-932 groups: theirs too
        self.streams_groups = streams_groups  # KIP-1071 groups: theirs too
        self.store = store
        self.timers = timers
        self.offsets = OffsetOps(coordinator, topics)
        self._runtime: CoordinatorRuntime[Record, Op, object] = CoordinatorRuntime(
            store, lambda context: GroupShard(context, self), store, timers.clock, store)
        store.writes.route(self.submit)
        if cluster:
            coordinator.local_partitions = set()  # nothing is ours until the metadata says so
        else:
            store.when_topic_exists(self.sync)

    def start(self) -> None:
        """At start-up, on the event loop (restored members' session timers need it)."""
        self.sync()

    async def on_metadata(self, image, change) -> None:
        """A ClusterMetadata listener (called after the cluster member applied the image)."""
        self.sync()

    def sync(self) -> None:
        self._runtime.sync()

    async def submit(self, group_id: str, op: OffsetOp | WriteRecords) -> object:
        """`op`'s answer from the group's partition, once its records are written; raises
        CoordinatorError (NOT_COORDINATOR when the partition is not led here, the coordinator's
        error for the log's when the write failed)."""
        return await self._runtime.submit(await self._partition_index(group_id), op)

    async def submit_transactional(self, group_id: str, op: TxnCommit, txn: TxnWrite) -> object:
        """As `submit`, `op`'s records written as `txn`'s producer's transactional batch, alone."""
        return await self._runtime.submit_transactional(await self._partition_index(group_id), op, txn)

    async def _partition_index(self, group_id: str) -> int:
        topic = await self.store.ensure_topic()
        if topic is None:
            raise CoordinatorError(ErrorCode.coordinator_not_available, f"{offsets_log.TOPIC} cannot be made now")
        return offsets_log.partition_for(group_id, len(topic.partitions))

    def replay_written(self, record: KeyValue, undo: UndoLog) -> None:
        """A record a group kind's coordinator returned, into its group kind. A classic group's
        record, and an offset's tombstone a deletion wrote, are their coordinator's, applied by it."""
        record_type = consumer_records.key_type(record.key)
        if record_type in consumer_records.TYPES:
            consumer_replay.replay_written(self.consumer_groups, record, undo)
        elif record_type in streams_records.TYPES:
            streams_replay.replay_written(self.streams_groups, record, undo)
        elif record_type in share_records.TYPES:
            share_group_replay.replay_written(self.share_groups, record, undo)

    def replaying(self, records):
        """Records past the consumer, share and streams groups' replays, on to offsets_replay.load."""
        return consumer_replay.replaying(self.consumer_groups, share_group_replay.replaying(
            self.share_groups, streams_replay.replaying(self.streams_groups, records)))


class GroupShard:
    """The groups of one `__consumer_offsets` partition: loaded, unloaded, and what runs in its turn."""

    def __init__(self, context: ShardContext[Op], loading: GroupLoading) -> None:
        self._partition: Partition = context.partition
        self._timer: ShardTimer[Op] = context.timer
        self._undo = context.undo
        self._loading = loading
        # The log's records until it is read whole: the groups' replays are one pass over them.
        self._records: list[StoredRecord | StoredMarker] | None = []
        loading.timers.partition_loaded(self._partition.index, self._timer)  # restored members' sessions

    def replay(self, record: Record) -> None:
        if isinstance(record, (StoredRecord, StoredMarker)):
            assert self._records is not None, "a record of the log after the load"
            self._records.append(record)
        elif isinstance(record, KeyValue):
            self._loading.replay_written(record, self._undo)
        else:
            self._loading.offsets.replay(record, self._undo)

    def loaded(self) -> None:
        records, self._records = self._records or [], None
        coordinator = self._loading.coordinator
        loaded = offsets_replay.load(coordinator, self._loading.replaying(records))
        if coordinator.local_partitions is not None:
            coordinator.local_partitions.add(self._partition.index)
        log.info("coordinating the groups of %s-%d (leader epoch %d): %d loaded", offsets_log.TOPIC,
                 self._partition.index, self._partition.leader_epoch, len(loaded))

    def handle(self, op: Op) -> Outcome[Record, object]:
        if isinstance(op, Fire):
            self._loading.timers.fire(op)
            return Outcome([], None)
        if isinstance(op, WriteRecords):
            return group_writes.handle(op)
        outcome = self._loading.offsets.handle(op)
        return Outcome(list(outcome.records), outcome.answer)

    def unloaded(self) -> None:
        index, loading = self._partition.index, self._loading
        loading.timers.partition_unloaded(index, self._timer)
        if loading.coordinator.local_partitions is not None:
            loading.coordinator.local_partitions.discard(index)
        topic = loading.store.topic()
        count = len(topic.partitions) if topic is not None else None

        def here(group_id: str) -> bool:
            return count is None or offsets_log.partition_for(group_id, count) == index
        gone = [g for g in loading.coordinator.groups.values() if here(g.group_id)]
        for group in gone:
            loading.coordinator.unload(group)
        moved = [g for g in loading.consumer_groups.groups.values() if here(g.group_id)]
        for consumer_group in moved:
            loading.consumer_groups.unload(consumer_group)
        streams = [g for g in loading.streams_groups.groups.values() if here(g.group_id)]
        for streams_group in streams:
            loading.streams_groups.unload(streams_group)
        shared = [g for g in loading.share_groups.groups if here(g)]
        for group_id in shared:
            loading.share_groups.unload(group_id)
        log.info("no longer coordinating the groups of %s-%d: %d unloaded", offsets_log.TOPIC, index,
                 len(gone) + len(moved) + len(streams) + len(shared))
