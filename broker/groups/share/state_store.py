"""Where `__share_group_state` records go and come back from (broker/coordinator/internal_topic_log.py):
the topic is created on first use (the first share-state request, or FindCoordinator with key
type share), as Kafka's share coordinator does, with share.coordinator.state.topic.num.partitions
partitions, segments of share.coordinator.state.topic.segment.bytes, replication factor
share.coordinator.state.topic.replication.factor and min.insync.replicas
share.coordinator.state.topic.min.isr (both capped by the live brokers). Writes are acks=-1, made
by the coordinator runtime (broker/coordinator/runtime.py) for the share coordinator's shards.
"""

from __future__ import annotations

from typing import Iterator, Sequence

from wire.error_codes import ErrorCode

from replica.partition import Partition
from broker.coordinator.internal_topic_log import InternalTopicLog, TopicServices, TopicShape
from broker.settings.share_group_options import ShareSettings
from broker.groups.share import state_log


class ShareStateStore(InternalTopicLog):
    def __init__(self, services: TopicServices, settings: ShareSettings) -> None:
        """`settings`: group.share.*, whose share.coordinator.state.topic.* shape the topic."""
        def shape() -> TopicShape:
            return TopicShape(settings.state_topic_partitions, settings.state_topic_replication_factor,
                              settings.state_topic_min_isr, settings.state_topic_segment_bytes)
        super().__init__(services, state_log.TOPIC, shape)

    async def append_records(self, partition: Partition,
                             records: Sequence[tuple[state_log.Key, state_log.ShareState | None]]) -> ErrorCode:
        """Write each key's new state (None: a tombstone) to `partition` as one batch; the log's
        error (ErrorCode.none once every in-sync replica has it)."""
        return await self.write(partition, [(state_log.encode_key(key), None if state is None else
                                             state_log.encode_value(state)) for key, state in records],
                                f"the state of {', '.join(str(key) for key, _ in records)}")

    def replay_partition(self, partition: Partition) -> Iterator[tuple[state_log.Key, state_log.ShareState | None]]:
        """Every record of one partition, in log order (unreadable batches skipped)."""
        return self.records(partition, lambda k, v: (
            state_log.decode_key(k), None if v is None else state_log.decode_value(v)), state_log.BadRecord)
