"""Where `__transaction_state` records go and come back from: the topic itself, on the normal engine.

Like `__consumer_offsets` (broker/groups/offsets_store.py), the topic is created on the first
transactional FindCoordinator / InitProducerId, as Kafka does: transaction.state.log.num.partitions
partitions, cleanup.policy=compact, no time retention, segments of transaction.state.log.segment.bytes,
replication factor min(transaction.state.log.replication.factor, live brokers) and
min.insync.replicas transaction.state.log.min.isr capped by that factor (Kafka leaves it uncapped,
so a one-broker Kafka needs both lowered by hand before a transaction works; capping serves the
same durability a cluster of that size can give).

Writes are acks=all: a record counts once the partition's high watermark passes it, within
Kafka's transaction.state.log request timeout. `append` answers the log's error name;
`coordinator_error` turns it into what Kafka's TransactionStateManager answers the client.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Iterator, NamedTuple

from segment.log import StorageError
from wire.batch_builder import build_batch
from wire.record_batch import iter_batches, parse_header
from wire.records import InvalidRecords, iter_records

from replica.partition import Partition, now_ms
from replica.partition_errors import PartitionError
from replica.readable_partition import FetchIsolation
from broker.topic_names import TopicError
from broker.topics import Topic
from broker.txn import txn_log

log = logging.getLogger(__name__)

WRITE_TIMEOUT_S = 5.0
_READ_CHUNK = 4 * 1024 * 1024
# The log's answer -> the coordinator's (Kafka's TransactionStateManager.appendTransactionToLog).
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


class StoredTxn(NamedTuple):
    partition: int
    transactional_id: str
    record: txn_log.TxnRecord | None  # None: the id was forgotten


class TxnStateStore:
    def __init__(self, broker) -> None:
        self._broker = broker
        self._creating: asyncio.Lock | None = None

    def topic(self) -> Topic | None:
        return self._broker.topics.get(txn_log.TOPIC)

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
            config = self._broker.config
            replication = max(1, min(config.txn_topic_replication_factor, len(self._broker.view.brokers())))
            configs = {"cleanup.policy": "compact", "retention.ms": "-1",
                       "segment.bytes": str(config.txn_topic_segment_bytes),
                       "min.insync.replicas": str(min(config.txn_topic_min_isr, replication))}
            try:
                return await self._broker.create_topic(txn_log.TOPIC, config.txn_topic_partitions, replication,
                                                       configs)
            except TopicError as exc:
                log.info("creating %s (replication factor %d) failed: %s", txn_log.TOPIC, replication, exc)
                return self.topic()

    def partition_index(self, transactional_id: str) -> int | None:
        """The id's partition (None while the topic does not exist)."""
        topic = self.topic()
        return None if topic is None else txn_log.partition_for(transactional_id, len(topic.partitions))

    def partition(self, transactional_id: str) -> Partition | None:
        topic = self.topic()
        if topic is None:
            return None
        return topic.partitions[txn_log.partition_for(transactional_id, len(topic.partitions))]

    async def append(self, transactional_id: str, record: txn_log.TxnRecord | None) -> str:
        """Write the id's new value (None: a tombstone); the log's error name ("none" once every
        in-sync replica has it)."""
        topic = await self.ensure_topic()
        if topic is None:
            return "unknown_topic_or_partition"
        partition = self.partition(transactional_id)
        if partition is None:
            return "not_leader_or_follower"
        value = None if record is None else txn_log.value(record)
        batch = build_batch([(txn_log.key(transactional_id), value)], now_ms())
        try:
            info, _ = partition.append_as_leader(batch, parse_header(batch), acks=-1)
            if partition.config.flush_messages:
                partition.publish(await self._broker.durable(partition))
            else:
                partition.publish()
        except PartitionError as exc:
            return exc.code
        except StorageError:
            log.exception("%s-%d: writing transactional id %s failed", txn_log.TOPIC, partition.index,
                          transactional_id)
            return "kafka_storage_error"
        return await partition.wait_for_replication(info.last_offset + 1, WRITE_TIMEOUT_S)

    def replay_partition(self, partition: Partition) -> Iterator[StoredTxn]:
        """Every record of one partition from its log start to its log end, in log order. A batch
        that cannot be read is skipped with a warning: one bad batch must not keep the broker
        from starting, nor hide the transactions whose records follow it."""
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
                        records = [(r.key, r.value) for r in iter_records(batch) if r.key is not None]
                        decoded = [StoredTxn(partition.index, txn_log.decode_key(k),
                                             None if v is None else txn_log.decode_value(v)) for k, v in records]
                    except (InvalidRecords, txn_log.BadRecord) as exc:
                        log.warning("skipping unreadable %s batch in partition %d at offsets %d-%d: %s",
                                    txn_log.TOPIC, partition.index, header.base_offset, header.last_offset, exc)
                        decoded = []
                    yield from decoded
                    offset = header.last_offset + 1
