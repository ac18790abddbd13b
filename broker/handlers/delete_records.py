"""DeleteRecords v0-v2: advance a partition's log start offset (AdminClient.deleteRecords).

Kafka's rules (replica.Partition.delete_records_before): offset -1 means the high watermark;
an offset above the high watermark or below -1 is OFFSET_OUT_OF_RANGE; an offset below the
current log start changes nothing; the reply's low watermark is the log start offset
afterwards; only the leader answers. Internal and key-lookup topics refuse it
(INVALID_TOPIC_EXCEPTION) and so do topics whose cleanup.policy lacks "delete"
(POLICY_VIOLATION). Whole segments (or commitlog entries) below the new start are dropped by
the engine; records before it in the first kept segment stay on disk but are never served
(fetch below the log start is OFFSET_OUT_OF_RANGE, ListOffsets earliest answers the new start).
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from replica.partition import Partition
from replica.partition_errors import PartitionError
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.topic_lookup import TopicLookup
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested


def _delete(topics: TopicLookup, topic_name: str, index: int, offset: int) -> tuple[ErrorCode, int]:
    """Returns (error, low watermark)."""
    topic = topics.get(topic_name)
    partition = topics.partition(topic_name, index)
    if topic is None or partition is None:
        return topics.missing_partition_error(topic_name, index), -1
    # checked first, as Kafka's ReplicaManager.deleteRecords; a read-only view owns no log
    if topic.internal or not isinstance(partition, Partition):
        return ErrorCode.invalid_topic_exception, -1
    try:
        return ErrorCode.none, partition.delete_records_before(offset)
    except PartitionError as exc:
        return exc.code, -1


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    topic_cls = nested(cls, "DeleteRecordsTopicResult")
    part_cls = nested(cls, "DeleteRecordsPartitionResult")
    topics = []
    refused = ctx.authorizer.denied_names(Operation.DELETE, ResourceType.TOPIC, (t.name for t in request.topics))
    for t in request.topics:
        parts = []
        for p in t.partitions:
            if t.name in refused:  # ACLs, as Kafka's handleDeleteRecordsRequest
                code, low = ErrorCode.topic_authorization_failed, -1
            else:
                code, low = _delete(ctx.topics, t.name, p.partition_index, p.offset)
            parts.append(make(part_cls, partition_index=p.partition_index, low_watermark=low,
                              error_code=code))
        topics.append(make(topic_cls, name=t.name, partitions=tuple(parts)))
    return make(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
