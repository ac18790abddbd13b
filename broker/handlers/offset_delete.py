"""OffsetDelete v0: a group's committed offsets dropped for some partitions, unless the group
consumes their topic (broker/groups/offset_deletion.py has Kafka's rules)."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    topic_cls = nested(cls, "OffsetDeleteResponseTopic")
    part_cls = nested(cls, "OffsetDeleteResponsePartition")
    if not ctx.authorizer.group_allowed(Operation.DELETE, request.group_id):  # ACLs, as Kafka's handleOffsetDeleteRequest
        return make(cls, error_code=ErrorCode.group_authorization_failed, throttle_time=NO_THROTTLE, topics=())
    unreadable = ctx.authorizer.denied_names(Operation.READ, ResourceType.TOPIC, (t.name for t in request.topics))
    wanted = [(t.name, [p.partition_index for p in t.partitions]) for t in request.topics if t.name not in unreadable]
    code, deleted = await ctx.groups.delete_offsets(request.group_id, wanted)
    codes = deleted | {(t.name, p.partition_index): ErrorCode.topic_authorization_failed
                       for t in request.topics if t.name in unreadable for p in t.partitions}
    wanted = [(t.name, [p.partition_index for p in t.partitions]) for t in request.topics]
    if code is not ErrorCode.none:
        return make(cls, error_code=code, throttle_time=NO_THROTTLE, topics=())
    topics = tuple(
        make(topic_cls, name=name, partitions=tuple(
            make(part_cls, partition_index=p, error_code=codes[(name, p)]) for p in dict.fromkeys(partitions)))
        for name, partitions in wanted)
    return make(cls, error_code=ErrorCode.none, throttle_time=NO_THROTTLE, topics=topics)
