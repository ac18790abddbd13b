"""DescribeTopicPartitions v0 (KIP-966): Metadata's topic answer, paginated — what the Java
Admin's describeTopics uses from Kafka 3.7 on.

Kafka's rules (DescribeTopicPartitionsRequestHandler, KRaftMetadataCache): the topics (all,
when the request names none) are taken in name order from the cursor's topic on, the cursor's
topic from its partition index, every later one from 0. At most
min(response_partition_limit, max.request.partition.size.limit = 2000) partitions are answered;
when a topic is cut short, or the limit is used up exactly before the next topic, next_cursor
names where the next page starts. A cursor whose topic the request's list lacks is
INVALID_REQUEST. Named topics that do not exist are answered UNKNOWN_TOPIC_OR_PARTITION (or
INVALID_TOPIC_EXCEPTION for a name no topic can have); listing all topics skips nothing.
"""

from __future__ import annotations

from typing import Any, Iterable

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.cluster.view import ClusterView
from broker.topic import Topic
from broker.topic_names import illegal_name
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested

MAX_PARTITIONS_PER_PAGE = 2000  # Kafka's max.request.partition.size.limit
UNKNOWN_OPERATIONS = -(2**31)


def _partitions(view: ClusterView, topic: Topic, part_cls: type, start: int, budget: int) -> tuple[list[Any], int]:
    """The topic's partitions from `start`, at most `budget`; and the index the next page
    starts at (-1: the topic is done)."""
    count = len(topic.partitions)
    upper = min(count, start + budget)
    out = []
    for index in range(max(start, 0), upper):
        placement = view.placement(topic.name, index, topic.partitions[index])
        if placement is None:
            continue  # created in etcd, not yet in this broker's image
        out.append(make(part_cls, error_code=ErrorCode.none if placement.leader >= 0 else ErrorCode.leader_not_available,
                        partition_index=index, leader_id=placement.leader, leader_epoch=placement.leader_epoch,
                        replica_nodes=placement.replicas, isr_nodes=placement.isr,
                        eligible_leader_replicas=(), last_known_elr=(),
                        offline_replicas=placement.offline_replicas))
    return out, upper if upper < count else -1


def _missing(topic_cls: type, name: str) -> Any:
    code = ErrorCode.invalid_topic_exception if illegal_name(name) else ErrorCode.unknown_topic_or_partition
    return make(topic_cls, error_code=code, name=name, topic_id=None, is_internal=False, partitions=(),
                topic_authorized_operations=UNKNOWN_OPERATIONS)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    topic_cls = nested(cls, "DescribeTopicPartitionsResponseTopic")
    part_cls = nested(cls, "DescribeTopicPartitionsResponsePartition")
    cursor_cls = nested(cls, "Cursor")
    cursor = request.cursor
    first = cursor.topic_name if cursor is not None else ""
    list_all = not request.topics
    asked: Iterable[str] = ctx.topics.topics if list_all else {t.name for t in request.topics}
    names = sorted(n for n in asked if n >= first)
    if cursor is not None and not list_all and cursor.topic_name not in names:
        return make(cls, throttle_time=NO_THROTTLE, next_cursor=None, topics=tuple(
            make(topic_cls, error_code=ErrorCode.invalid_request, name=t.name, topic_id=None, is_internal=False,
                 partitions=(), topic_authorized_operations=UNKNOWN_OPERATIONS) for t in request.topics))
    remaining = min(MAX_PARTITIONS_PER_PAGE, request.response_partition_limit)
    topics, next_cursor = [], None
    hidden = ctx.authorizer.denied_names(Operation.DESCRIBE, ResourceType.TOPIC, names)  # ACLs: DESCRIBE on the topic
    for name in names:
        if name in hidden:
            if not list_all:
                topics.append(make(topic_cls, error_code=ErrorCode.topic_authorization_failed, name=name, topic_id=None,
                                   is_internal=False, partitions=(), topic_authorized_operations=UNKNOWN_OPERATIONS))
            continue
        if remaining <= 0:
            if remaining == 0:
                next_cursor = make(cursor_cls, topic_name=name, partition_index=0)
            break
        topic = ctx.topics.get(name)
        if topic is None:
            if not list_all:
                topics.append(_missing(topic_cls, name))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        partitions, next_index = _partitions(ctx.view, topic, part_cls, start, remaining)
        topics.append(make(topic_cls, error_code=ErrorCode.none, name=name, topic_id=topic.topic_id,
                           is_internal=topic.internal, partitions=tuple(partitions),
                           topic_authorized_operations=UNKNOWN_OPERATIONS))
        if next_index != -1:
            next_cursor = make(cursor_cls, topic_name=name, partition_index=next_index)
            break
        remaining -= len(partitions)
    return make(cls, throttle_time=NO_THROTTLE, topics=tuple(topics), next_cursor=next_cursor)
