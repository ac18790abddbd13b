"""Where `__share_group_state` records go and come back from: the topic itself, on the normal engine.

Like `__transaction_state` (broker/txn/state_store.py), the topic is created on first use (the first
share-state request, or FindCoordinator with key type share), as Kafka's share coordinator does:
share.coordinator.state.topic.num.partitions partitions, cleanup.policy=compact, no time retention,
segments of share.coordinator.state.topic.segment.bytes, replication factor
min(share.coordinator.state.topic.replication.factor, live brokers) and min.insync.replicas
share.coordinator.state.topic.min.isr capped by that factor.

Writes are acks=-1: a record counts once the partition's high watermark passes it. `append`
answers the log's error name; `coordinator_error` turns it into the share coordinator's answer.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Iterator

from segment.log import StorageError
from wire.batch_builder import build_batch
from wire.record_batch import iter_batches, parse_header
from wire.records import InvalidRecords, iter_records

from replica.partition import Partition, now_ms
from replica.partition_errors import PartitionError
from replica.readable_partition import FetchIsolation
from broker.topic_names import TopicError
from broker.topics import Topic
from broker.groups.share import state_log

log = logging.getLogger(__name__)

WRITE_TIMEOUT_S = 5.0
_READ_CHUNK = 4 * 1024 * 1024
# The log's answer -> the share coordinator's: a log that refuses means another broker leads it.
_COORDINATOR_ERRORS = {
    "unknown_topic_or_partition": "coordinator_not_available",
    "not_enough_replicas": "coordinator_not_available",
    "not_enough_replicas_after_append": "coordinator_not_available",
    "request_timed_out": "coordinator_not_available",
    "not_leader_or_follower": "not_coordinator",
    "kafka_storage_error": "not_coordinator",
    "message_too_large": "unknown_server_error",
    "record_list_too_large": "unknown_server_error",
}


def coordinator_error(log_error: str) -> str:
    return _COORDINATOR_ERRORS.get(log_error, log_error)


class ShareStateStore:
    def __init__(self, broker) -> None:
        self._broker = broker
        self._creating: asyncio.Lock | None = None

    def topic(self) -> Topic | None:
        return self._broker.topics.get(state_log.TOPIC)

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
            s = self._broker.config.share_groups
            replication = max(1, min(s.state_topic_replication_factor, len(self._broker.view.brokers())))
            configs = {"cleanup.policy": "compact", "retention.ms": "-1",
                       "segment.bytes": str(s.state_topic_segment_bytes),
                       "min.insync.replicas": str(min(s.state_topic_min_isr, replication))}
            try:
                return await self._broker.create_topic(state_log.TOPIC, s.state_topic_partitions, replication,
                                                       configs)
            except TopicError as exc:
                log.info("creating %s (replication factor %d) failed: %s", state_log.TOPIC, replication, exc)
                return self.topic()

    async def append(self, partition: Partition, key: state_log.Key, state: state_log.ShareState | None) -> str:
        """Write the key's new state (None: a tombstone) to `partition`; the log's error name
        ("none" once every in-sync replica has it)."""
        value = None if state is None else state_log.encode_value(state)
        batch = build_batch([(state_log.encode_key(key), value)], now_ms())
        try:
            info, _ = partition.append_as_leader(batch, parse_header(batch), acks=-1)
            if partition.config.flush_messages:
                partition.publish(await self._broker.durable(partition))
            else:
                partition.publish()
        except PartitionError as exc:
            return exc.code
        except StorageError:
            log.exception("%s-%d: writing the state of %s failed", state_log.TOPIC, partition.index, key)
            return "kafka_storage_error"
        return await partition.wait_for_replication(info.last_offset + 1, WRITE_TIMEOUT_S)

    def replay_partition(self, partition: Partition) -> Iterator[tuple[state_log.Key, state_log.ShareState | None]]:
        """Every record of one partition from its log start to its log end, in log order. A batch
        that cannot be read is skipped with a warning: one bad batch must not hide the states
        whose records follow it."""
        offset, end = partition.log_start_offset, partition.log_end_offset
        while offset < end:
            regions = partition.read(offset, _READ_CHUNK, FetchIsolation.LOG_END)
            if not regions:
                break
            for region in regions:
                data = partition.read_bytes(region)
                for pos, header in iter_batches(data):
                    batch = memoryview(data)[pos:pos + header.size]
                    try:
                        decoded = [(state_log.decode_key(bytes(r.key)),
                                    None if r.value is None else state_log.decode_value(bytes(r.value)))
                                   for r in iter_records(batch) if r.key is not None]
                    except (InvalidRecords, state_log.BadRecord) as exc:
                        log.warning("skipping unreadable %s batch in partition %d at offsets %d-%d: %s",
                                    state_log.TOPIC, partition.index, header.base_offset, header.last_offset, exc)
                        decoded = []
                    yield from decoded
                    offset = header.last_offset + 1
