"""Where `__consumer_offsets` records go and come back from: the topic itself, on the normal engine.

The topic is created the first time a group needs it (Kafka does the same on the first
FindCoordinator), with `offsets.topic.num.partitions` partitions, no time retention and
segments of offsets.topic.segment.bytes (100 MiB). In a cluster it is created through
etcd like any topic, with replication factor min(offsets.topic.replication.factor, live
brokers). It is cleanup.policy=compact like Kafka's: the log cleaner keeps each key's latest
record of its closed segments, so a load replays those plus the active segment (the latest
value per key wins, as before cleaning).
A batch replay cannot read is skipped with a warning naming its partition and offsets: one bad
batch must not keep the broker from starting, nor hide the groups whose records follow it.
TxnOffsetCommit's batches are transactional batches of the producer, and the transaction
coordinator's COMMIT / ABORT markers end them: replay hands both on (StoredRecord with the
producer id, StoredMarker), for offsets_replay.load to apply as pending_offsets.py says.

Writes go through the broker's one write path (replica/write_path.py), under the topic's flush
policy like any log, with Kafka's offsets.commit.required.acks=-1: a batch counts once the
partition's high watermark passes it (every ISR member has it), within
offsets.commit.timeout.ms. Both writers of the coordinator runtime (group_loading.py) are here:
`append_records` writes what the groups' shards return (the committed offsets and every group
kind's own records, `writes`, group_writes.py), `append_transactional` a TxnOffsetCommit's
offsets as the producer's transactional batch. Both answer the log's ErrorCode.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable, Iterator, NamedTuple, Sequence

from wire.batch_builder import build_batch
from wire.error_codes import ErrorCode
from wire.control_batch import COMMIT, control_type, is_marker
from wire.record_batch import BatchHeader, parse_header
from wire.records import iter_records

from replica.partition import Partition
from replica.write_path import RecordsWrite, WritePath
from broker.coordinator.clock import Clock
from broker.coordinator.runtime import TxnWrite
from broker.coordinator.internal_topic_log import InternalTopicLog, TopicShape, batches
from broker.settings.config import BrokerConfig
from broker.topic import Topic
from broker.groups import offsets_log
from broker.groups.committed_offset import OffsetRecord
from broker.groups.group_writes import GroupWrites

log = logging.getLogger(__name__)

COMMIT_TIMEOUT_S = 5.0  # offsets.commit.timeout.ms

class StoredRecord(NamedTuple):
    partition: int
    offset: int
    key: bytes
    value: bytes | None
    producer_id: int = -1  # >= 0: a TxnOffsetCommit's record, in that producer's transaction


class StoredMarker(NamedTuple):
    """A COMMIT or ABORT marker: it ends its producer's transaction in this partition."""
    partition: int
    offset: int
    producer_id: int
    commit: bool


def applying(records: Iterable[StoredRecord | StoredMarker], owns: Callable[[bytes], bool],
             apply: Callable[[StoredRecord], None], what: str) -> Iterator[StoredRecord | StoredMarker]:
    """A replay's filter in the stream a load reads (group_loading.py): the records whose key
    `owns` says are its own are applied as they pass (an unreadable one skipped with a
    warning), every other record and every transaction marker is handed on."""
    for record in records:
        if isinstance(record, StoredMarker):  # a transaction's end: offsets_replay.load applies it
            yield record
            continue
        try:
            ours = owns(record.key)
        except offsets_log.BadRecord:
            ours = False
        if not ours:
            yield record
            continue
        try:
            apply(record)
        except offsets_log.BadRecord as exc:
            log.warning("skipping unreadable %s record in partition %d at offset %d: %s",
                        what, record.partition, record.offset, exc)


def offsets_topic_shape(config: BrokerConfig, partitions: int) -> Callable[[], TopicShape]:
    """How the topic is made: `partitions` (offsets.topic.num.partitions) and the broker's
    offsets.topic.replication.factor and offsets.topic.segment.bytes."""
    return lambda: TopicShape(partitions, config.offsets_topic_replication_factor, None,
                              config.offsets_topic_segment_bytes)


class OffsetsStore:
    name = offsets_log.TOPIC

    def __init__(self, topic_log: InternalTopicLog, write_path: WritePath, clock: Clock,
                 commit_timeout_s: float = COMMIT_TIMEOUT_S) -> None:
        """`topic_log`: the topic (`offsets_topic_shape`: how it is made); `write_path`: the
        broker's one write path; `clock`: the group coordinators' (group_timers.py), the time a
        batch is stamped with."""
        self._log = topic_log
        self._write_path = write_path
        self._clock = clock
        self._commit_timeout_s = commit_timeout_s
        self.writes = GroupWrites()  # the group kinds' own records, through the runtime
        self._exists: Callable[[], None] | None = None

    def when_topic_exists(self, callback: Callable[[], None]) -> None:
        """Call `callback` the first time `ensure_topic` finds the topic (a single broker loads
        its partitions then, before any record is written to them)."""
        self._exists = callback

    def topic(self) -> Topic | None:
        return self._log.topic()

    async def ensure_topic(self) -> Topic | None:
        """The topic, created if missing; None when a cluster cannot create it now (too few
        brokers, etcd unreachable, or another broker's creation not yet in our metadata)."""
        topic = await self._log.ensure_topic()
        if topic is not None and self._exists is not None:
            exists, self._exists = self._exists, None
            exists()
        return topic

    def partition_index(self, group_id: str) -> int | None:
        """The group's partition of the topic (None while the topic does not exist). An
        existing topic keeps the partition count it was created with."""
        topic = self.topic()
        if topic is None:
            return None
        return offsets_log.partition_for(group_id, len(topic.partitions))

    async def append_records(self, partition: Partition, records: Sequence[offsets_log.Written]) -> ErrorCode:
        """The records of a groups' shard's operations, as one batch (the coordinator runtime's
        writer); the log's error (ErrorCode.none once the batch is as durable as the topic asks
        and every in-sync replica has it)."""
        return await self._write(partition, records, None)

    async def append_transactional(self, partition: Partition, records: Sequence[offsets_log.Written],
                                   txn: TxnWrite) -> ErrorCode:
        """A TxnOffsetCommit's records, as one transactional batch of the producer at sequence 0,
        as Kafka's coordinator writes it (its epoch alone is checked: an older one is
        INVALID_PRODUCER_EPOCH); `txn.verified`: the guard under which the producer's transaction
        was asked to hold the partition (txn_offsets.py), the batch refused (INVALID_TXN_STATE)
        if a marker came meanwhile."""
        return await self._write(partition, records, txn)

    async def _write(self, partition: Partition, records: Sequence[offsets_log.Written],
                     txn: TxnWrite | None) -> ErrorCode:
        """Each offset value learns where its record went as soon as the batch is in the log,
        before it is replicated: a marker written after it ends it (pending_offsets.py)."""
        sequenced = None if txn is None else (txn.producer_id, txn.producer_epoch, 0)
        batch = build_batch([offsets_log.key_value(r) for r in records], self._clock.now_ms(), sequenced,
                            transactional=txn is not None)
        write = RecordsWrite(partition, batch, parse_header(batch), from_client=False, coordinator=True,
                             verified=None if txn is None else txn.verified)
        pending = await self._write_path.append([write], acks=-1)
        (result,) = pending.results
        if result.ok:
            for i, record in enumerate(records):
                if isinstance(record, OffsetRecord):
                    record.written_at(result.info.first_offset + i)
            (result,) = await pending.completed(self._commit_timeout_s)
        if result.error is ErrorCode.kafka_storage_error:
            log.error("%s-%d: writing failed: %s", offsets_log.TOPIC, partition.index, result.message)
        return result.error

    def replay(self) -> Iterator[StoredRecord | StoredMarker]:
        """Every keyed record and marker of every partition hosted here, in log order per partition."""
        topic = self.topic()
        if topic is None:
            return
        for partition in topic.partitions:
            if partition is not None:  # in a cluster, only the partitions hosted here
                yield from self.replay_partition(partition)

    def replay_partition(self, partition: Partition) -> Iterator[StoredRecord | StoredMarker]:
        """Every keyed record and marker of one partition, from its log start to its log end (a new
        leader owns its whole log: what lies above the HW is what the followers will copy)."""
        for batch, header, from_offset in batches(partition):
            yield from _batch_records(partition.index, batch, header, from_offset)


def _batch_records(partition: int, batch: memoryview, header: BatchHeader,
                   from_offset: int) -> list[StoredRecord | StoredMarker]:
    """The batch's keyed records at or after `from_offset` (or its marker), or none if any record
    is unreadable.

    The whole batch is decoded before any record is applied: a commit is one batch (_write
    above), and half of one must not be replayed. InvalidRecords is everything iter_records
    raises (hostile lengths, codecs that fail, a wrong magic); a control batch that is no
    transaction marker raises ValueError.
    """
    try:
        if header.is_control:
            if not is_marker(header) or header.base_offset < from_offset:
                return []
            return [StoredMarker(partition, header.base_offset, header.producer_id, control_type(batch) == COMMIT)]
        producer_id = header.producer_id if header.is_transactional else -1
        return [StoredRecord(partition, r.offset, r.key, r.value, producer_id) for r in iter_records(batch)
                if r.key is not None and r.offset >= from_offset]
    except ValueError as exc:
        log.warning("skipping unreadable %s batch in partition %d at offsets %d-%d: %s",
                    offsets_log.TOPIC, partition, header.base_offset, header.last_offset, exc)
        return []
