"""An internal compacted topic a coordinator keeps its state in (`__transaction_state`,
`__share_group_state`): the topic itself, on the normal engine, as Kafka's coordinators keep
theirs (TransactionStateManager, the share coordinator's runtime).

The topic is created on first use with the coordinator's settings: its partition count,
cleanup.policy=compact, no time retention, its segment size, replication factor
min(setting, live brokers) and min.insync.replicas capped by that factor (Kafka leaves it
uncapped, so a one-broker Kafka needs both lowered by hand before the coordinator works; capping
serves the same durability a cluster of that size can give).

Writes go through the broker's one write path (replica/write_path.py) with acks=-1, under the
topic's flush policy like any log: a record counts once the partition's high watermark passes
it, within the coordinator's request timeout. `write` answers the log's ErrorCode;
`coordinator_error` turns it into what Kafka's coordinators answer their clients. `records` replays one partition whole;
`batches` reads it for a coordinator that needs more than keys and values (`__consumer_offsets`).

What the log uses of the broker is its TopicServices: the topics, the live brokers (a replication
factor's cap), the topic creation and the write path.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Callable, Iterator, NamedTuple, Protocol, Sequence, TypeVar

from wire.batch_builder import build_batch
from wire.error_codes import ErrorCode
from wire.record_batch import BatchHeader, iter_batches, parse_header
from wire.records import InvalidRecords, iter_records

from replica.partition import Partition, now_ms
from replica.readable_partition import FetchIsolation
from replica.write_path import RecordsWrite, Write, WriteResult
from broker.api.topic_lookup import TopicLookup
from broker.cluster.view import ClusterView
from broker.topic_names import TopicError
from broker.topic import Topic

log = logging.getLogger(__name__)

WRITE_TIMEOUT_S = 5.0
_READ_CHUNK = 4 * 1024 * 1024
# The log's answer -> the coordinator's (Kafka's TransactionStateManager.appendTransactionToLog;
# the share coordinator answers the same way): a log that refuses means another broker leads it.
_COORDINATOR_ERRORS = {
    ErrorCode.unknown_topic_or_partition: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas_after_append: ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
    ErrorCode.not_leader_or_follower: ErrorCode.not_coordinator,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
    ErrorCode.message_too_large: ErrorCode.unknown_server_error,
    ErrorCode.record_list_too_large: ErrorCode.unknown_server_error,
}

# The log's answers to a write whose records it appended but could not replicate in time: they
# are the leader's log's, and stay in its coordinator's state (coordinator/runtime.py).
APPENDED = frozenset({ErrorCode.request_timed_out, ErrorCode.not_enough_replicas_after_append})

T = TypeVar("T")


def coordinator_error(log_error: ErrorCode) -> ErrorCode:
    """What the coordinator answers its client when writing its state failed."""
    return _COORDINATOR_ERRORS.get(log_error, log_error)


class TopicShape(NamedTuple):
    """The coordinator's settings for its topic."""

    partitions: int
    replication_factor: int
    min_isr: int | None  # None: the broker's min.insync.replicas, as Kafka's __consumer_offsets has
    segment_bytes: int


class TopicCreator(Protocol):
    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str]) -> Topic:
        """The topic, once this broker serves it; raises TopicError."""


class RecordsAppender(Protocol):
    async def append_records(self, writes: Sequence[Write], acks: int, timeout_s: float) -> list[WriteResult]:
        """Each write appended as its partition's leader, once `acks` allow (the one write path)."""


@dataclass(frozen=True)
class TopicServices:
    """What an internal topic's log uses of the broker."""

    topics: TopicLookup
    view: ClusterView  # the live brokers, which cap the topic's replication factor
    topic_admin: TopicCreator
    write_path: RecordsAppender


class InternalTopicLog:
    def __init__(self, services: TopicServices, name: str, shape: Callable[[], TopicShape]) -> None:
        self._services = services
        self.name = name
        self._shape = shape  # read when the topic is made, from the settings of that moment
        self._creating: asyncio.Lock | None = None

    def topic(self) -> Topic | None:
        return self._services.topics.get(self.name)

    async def ensure_topic(self) -> Topic | None:
        """The topic, created if missing; None when a cluster cannot create it now."""
        topic = self.topic()
        if topic is not None:
            return topic
        if self._creating is None:
            self._creating = asyncio.Lock()
        async with self._creating:
            topic = self.topic()
            if topic is not None:
                return topic
            shape = self._shape()
            replication = max(1, min(shape.replication_factor, len(self._services.view.brokers())))
            configs = {"cleanup.policy": "compact", "retention.ms": "-1",
                       "segment.bytes": str(shape.segment_bytes)}
            if shape.min_isr is not None:
                configs["min.insync.replicas"] = str(min(shape.min_isr, replication))
            try:
                return await self._services.topic_admin.create_topic(self.name, shape.partitions, replication, configs)
            except TopicError as exc:
                log.info("creating %s (replication factor %d) failed: %s", self.name, replication, exc)
                return self.topic()

    async def write(self, partition: Partition, records: Sequence[tuple[bytes, bytes | None]], what: str) -> ErrorCode:
        """(key, value) records (value None: a tombstone) in `partition`, as one batch through the
        write path; the log's error (ErrorCode.none once every in-sync replica has them). `what`
        names the records in a log line if it fails."""
        batch = build_batch(list(records), now_ms())
        write = RecordsWrite(partition, batch, parse_header(batch), from_client=False)
        (result,) = await self._services.write_path.append_records([write], acks=-1, timeout_s=WRITE_TIMEOUT_S)
        if result.error is ErrorCode.kafka_storage_error:
            log.error("%s-%d: writing %s failed: %s", self.name, partition.index, what, result.message)
        return result.error

    def records(self, partition: Partition, decode: Callable[[bytes, bytes | None], T],
                unreadable: type[Exception]) -> Iterator[T]:
        """decode(key, value) of every keyed record of one partition from its log start to its
        log end, in log order. A batch that cannot be read (or decoded: `unreadable`) is skipped
        with a warning: one bad batch must not keep the broker from starting, nor hide the
        state whose records follow it."""
        for batch, header, _ in batches(partition):
            try:
                decoded = [decode(bytes(r.key), None if r.value is None else bytes(r.value))
                           for r in iter_records(batch) if r.key is not None]
            except (InvalidRecords, unreadable) as exc:
                log.warning("skipping unreadable %s batch in partition %d at offsets %d-%d: %s",
                            self.name, partition.index, header.base_offset, header.last_offset, exc)
                decoded = []
            yield from decoded


def batches(partition: Partition) -> Iterator[tuple[memoryview, BatchHeader, int]]:
    """(batch, header, the offset the read asked for) of every batch of one partition from its log
    start to its log end: a new leader owns its whole log (what lies above the HW is what the
    followers will copy). A batch may begin below the offset asked for (a read returns whole
    batches); records below it were seen already."""
    offset, end = partition.log_start_offset, partition.log_end_offset
    while offset < end:
        regions = partition.read(offset, _READ_CHUNK, FetchIsolation.LOG_END)
        if not regions:
            break
        for region in regions:
            data = partition.read_bytes(region)
            for pos, header in iter_batches(data):
                yield memoryview(data)[pos:pos + header.size], header, offset
                offset = header.last_offset + 1
