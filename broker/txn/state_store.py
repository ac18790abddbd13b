"""Where `__transaction_state` records go and come back from (broker/coordinator/internal_topic_log.py):
the topic is created on the first transactional FindCoordinator / InitProducerId, as Kafka
does, with transaction.state.log.num.partitions partitions, segments of
transaction.state.log.segment.bytes, replication factor transaction.state.log.replication.factor
and min.insync.replicas transaction.state.log.min.isr (both capped by the live brokers). Writes
are acks=all, made by the coordinator runtime (broker/coordinator/runtime.py) for the transaction
coordinator's shards (txn_shard.py); `append_records` answers the log's error (an ErrorCode).
"""

from __future__ import annotations

from typing import Iterator, Sequence

from wire.error_codes import ErrorCode

from replica.partition import Partition
from broker.coordinator.internal_topic_log import InternalTopicLog, TopicServices, TopicShape
from broker.settings.config import BrokerConfig
from broker.txn import txn_log
from broker.txn.txn_ops import StoredTxn


class TxnStateStore(InternalTopicLog):
    def __init__(self, services: TopicServices, config: BrokerConfig) -> None:
        def shape() -> TopicShape:
            return TopicShape(config.txn_topic_partitions, config.txn_topic_replication_factor,
                              config.txn_topic_min_isr, config.txn_topic_segment_bytes)
        super().__init__(services, txn_log.TOPIC, shape)

    def partition_index(self, transactional_id: str) -> int | None:
        """The id's partition (None while the topic does not exist)."""
        topic = self.topic()
        return None if topic is None else txn_log.partition_for(transactional_id, len(topic.partitions))

    async def append_records(self, partition: Partition, records: Sequence[StoredTxn]) -> ErrorCode:
        """Write each id's new value (None: a tombstone) to `partition` as one batch; the log's
        error (ErrorCode.none once every in-sync replica has it)."""
        return await self.write(partition, [(txn_log.key(r.transactional_id), None if r.record is None else
                                             txn_log.value(r.record)) for r in records],
                                f"transactional ids {', '.join(r.transactional_id for r in records)}")

    def replay_partition(self, partition: Partition) -> Iterator[StoredTxn]:
        """Every record of one partition, in log order (unreadable batches skipped)."""
        return self.records(partition, lambda k, v: StoredTxn(
            txn_log.decode_key(k), None if v is None else txn_log.decode_value(v)), txn_log.BadRecord)
