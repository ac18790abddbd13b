"""Where `__transaction_state` records go and come back from (broker/coordinator/internal_topic_log.py):
the topic is created on the first transactional FindCoordinator / InitProducerId, as Kafka
does, with transaction.state.log.num.partitions partitions, segments of
transaction.state.log.segment.bytes, replication factor transaction.state.log.replication.factor
and min.insync.replicas transaction.state.log.min.isr (both capped by the live brokers). Writes
are acks=all within Kafka's transaction.state.log request timeout; `append` answers the log's
error (an ErrorCode) and `coordinator_error` what Kafka's TransactionStateManager answers the client.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

from wire.error_codes import ErrorCode

from replica.partition import Partition
from broker.coordinator.internal_topic_log import InternalTopicLog, TopicShape
from broker.txn import txn_log


class StoredTxn(NamedTuple):
    partition: int
    transactional_id: str
    record: txn_log.TxnRecord | None  # None: the id was forgotten


class TxnStateStore(InternalTopicLog):
    def __init__(self, broker) -> None:
        def shape() -> TopicShape:
            c = broker.config
            return TopicShape(c.txn_topic_partitions, c.txn_topic_replication_factor, c.txn_topic_min_isr,
                              c.txn_topic_segment_bytes)
        super().__init__(broker, txn_log.TOPIC, shape)

    def partition_index(self, transactional_id: str) -> int | None:
        """The id's partition (None while the topic does not exist)."""
        topic = self.topic()
        return None if topic is None else txn_log.partition_for(transactional_id, len(topic.partitions))

    def partition(self, transactional_id: str) -> Partition | None:
        topic = self.topic()
        if topic is None:
            return None
        return topic.partitions[txn_log.partition_for(transactional_id, len(topic.partitions))]

    async def append(self, transactional_id: str, record: txn_log.TxnRecord | None) -> ErrorCode:
        """Write the id's new value (None: a tombstone); the log's error (ErrorCode.none once
        every in-sync replica has it)."""
        topic = await self.ensure_topic()
        if topic is None:
            return ErrorCode.unknown_topic_or_partition
        partition = self.partition(transactional_id)
        if partition is None:
            return ErrorCode.not_leader_or_follower
        value = None if record is None else txn_log.value(record)
        return await self.write(partition, [(txn_log.key(transactional_id), value)],
                                f"transactional id {transactional_id}")

    def replay_partition(self, partition: Partition) -> Iterator[StoredTxn]:
        """Every record of one partition, in log order (unreadable batches skipped)."""
        return self.records(partition, lambda k, v: StoredTxn(
            partition.index, txn_log.decode_key(k), None if v is None else txn_log.decode_value(v)),
            txn_log.BadRecord)
