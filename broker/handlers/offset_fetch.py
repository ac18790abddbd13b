"""OffsetFetch v1-v10: committed offsets of one group (v1-v7) or of several (v8+).

A partition without a committed offset answers -1 and no error, as Kafka does; null topics
(v2+) mean every partition the group has committed. With require_stable (v7+) a partition an
open transaction wrote an offset for answers UNSTABLE_OFFSET_COMMIT (KIP-447: the client
retries until the transaction ends); without it, the last committed offset. A group this broker does not coordinate
gets NOT_COORDINATOR: at the top (v2-v7), per group (v8+), or on every partition asked (v1,
which has no top-level error).

v10 names topics by id, asked and answered (offset_topic_ids.py): an id unknown here answers
UNKNOWN_TOPIC_ID on each partition asked. Asked for every committed topic, a v10 answer leaves
out the offsets of a topic that no longer exists, since it has no id to name it by (a v9 answer
lists them by name, as before).
"""

from __future__ import annotations

from typing import Any

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.groups.offsets import Fetched
from broker.handlers.offset_topic_ids import id_of, requested_name
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested


def _topics(ctx: ApiContext, cls: Any, topic_name: str, part_name: str, group_id: str, topics: Any,
            not_here: ErrorCode | None, require_stable: bool) -> tuple[Any, ...]:
    topic_cls, part_cls = nested(cls, topic_name), nested(cls, part_name)
    by_id = cls.__version__ >= 10
    named = [] if topics is None else [(requested_name(ctx.topics, t), t) for t in topics]
    wanted = None if topics is None else [(name, list(t.partition_indexes)) for name, t in named if name is not None]
    fetched: Fetched
    if not_here:
        fetched = [(topic, [(p, None, ErrorCode.none) for p in partitions]) for topic, partitions in wanted or ()]
    else:
        fetched = ctx.groups.fetch_offsets(group_id, wanted, require_stable)
    # ACLs, as Kafka's handleOffsetFetchRequest: DESCRIBE on each topic; one asked by name fails,
    # one of "every committed topic" is left out
    hidden = ctx.authorizer.denied_names(Operation.DESCRIBE, ResourceType.TOPIC, (topic for topic, _ in fetched))
    out = [make(topic_cls, topic_id=t.topic_id, partitions=tuple(
        make(part_cls, partition_index=index, committed_offset=-1, committed_leader_epoch=-1, metadata="",
             error_code=ErrorCode.unknown_topic_id) for index in t.partition_indexes))
        for name, t in named if name is None]
    for topic, partitions in fetched:
        topic_id = id_of(ctx.topics, topic) if by_id else None
        if wanted is None and (topic in hidden or (by_id and topic_id is None)):
            continue
        code = ErrorCode.topic_authorization_failed if topic in hidden and not not_here else (not_here or ErrorCode.none)
        parts = []
        for index, committed, partition_code in partitions:
            if code is not ErrorCode.none:
                committed, partition_code = None, code
            parts.append(make(
                part_cls, partition_index=index,
                committed_offset=committed.offset if committed else -1,
                committed_leader_epoch=committed.leader_epoch if committed else -1,
                metadata=committed.metadata if committed else "", error_code=partition_code,
            ))
        out.append(make(topic_cls, name=topic, topic_id=topic_id, partitions=tuple(parts)))
    return tuple(out)


def _refusal(ctx: ApiContext, group_id: str, member_id: str | None = None, member_epoch: int = -1) -> ErrorCode | None:
    """The group's error: DESCRIBE on it (ACLs, as Kafka), whether it is coordinated here, and
    (v9+, a consumer-protocol or streams group) the member's epoch."""
    if not ctx.authorizer.group_allowed(Operation.DESCRIBE, group_id):
        return ErrorCode.group_authorization_failed
    return ctx.groups.fetch_error(group_id, member_id, member_epoch)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    if header.api_version < 8:
        not_here = _refusal(ctx, request.group_id)
        topics = _topics(ctx, cls, "OffsetFetchResponseTopic", "OffsetFetchResponsePartition",
                         request.group_id, request.topics if header.api_version < 2 or not not_here else (),
                         not_here, getattr(request, "require_stable", False))
        return make(cls, throttle_time=NO_THROTTLE, topics=topics, error_code=not_here or ErrorCode.none)
    group_cls = nested(cls, "OffsetFetchResponseGroup")
    groups = []
    for g in request.groups:
        not_here = _refusal(ctx, g.group_id, getattr(g, "member_id", None), getattr(g, "member_epoch", -1))
        topics = _topics(ctx, cls, "OffsetFetchResponseTopics", "OffsetFetchResponsePartitions",
                         g.group_id, () if not_here else g.topics, not_here, request.require_stable)
        groups.append(make(group_cls, group_id=g.group_id, error_code=not_here or ErrorCode.none, topics=topics))
    return make(cls, throttle_time=NO_THROTTLE, groups=tuple(groups))
