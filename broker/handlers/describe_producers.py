"""DescribeProducers v0: the producers each asked partition's leader remembers (KIP-664), as
Kafka's handleDescribeProducersRequest answers it.

Per topic: READ on it, else TOPIC_AUTHORIZATION_FAILED on every partition asked; a topic this
cluster does not have is UNKNOWN_TOPIC_OR_PARTITION. Per partition: a partition this broker
leads lists its producer state (replica/producer_state.py: id, epoch, last sequence and
timestamp, the last marker's coordinator epoch, the first offset of its open transaction, -1
where unknown); NOT_LEADER_OR_FOLLOWER where another broker leads. A read-only key-lookup
view (broker/key_topic.py) has no producers of its own: an empty list.
"""

from __future__ import annotations

from typing import Any

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.topic_lookup import TopicLookup
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested


def _partition(topics: TopicLookup, cls: type, topic: str, index: int, refusal: ErrorCode | None) -> Any:
    producer_cls = nested(cls, "ProducerState")
    partition = None
    if refusal is None:
        partition = topics.partition(topic, index)
        if partition is None:
            refusal = topics.missing_partition_error(topic, index)
        elif not partition.is_leader:
            refusal = ErrorCode.not_leader_or_follower
    if refusal is not None or partition is None:
        return make(nested(cls, "PartitionResponse"), partition_index=index, error_code=refusal,
                    error_message=None, active_producers=())
    producers = tuple(make(producer_cls, producer_id=p.producer_id, producer_epoch=p.epoch,
                           last_sequence=p.last_sequence, last_timestamp=p.last_timestamp,
                           coordinator_epoch=p.coordinator_epoch, current_txn_start_offset=p.current_txn_start_offset)
                      for p in partition.active_producers())
    return make(nested(cls, "PartitionResponse"), partition_index=index, error_code=ErrorCode.none,
                error_message=None, active_producers=producers)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    denied = ctx.authorizer.denied_names(Operation.READ, ResourceType.TOPIC, (t.name for t in request.topics))
    topics = []
    for t in request.topics:
        if t.name in denied:
            refusal = ErrorCode.topic_authorization_failed
        elif ctx.topics.get(t.name) is None:
            refusal = ErrorCode.unknown_topic_or_partition
        else:
            refusal = None
        partitions = tuple(_partition(ctx.topics, cls, t.name, i, refusal) for i in t.partition_indexes)
        topics.append(make(nested(cls, "TopicResponse"), name=t.name, partitions=partitions))
    return make(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
