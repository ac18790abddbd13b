"""DescribeShareGroupOffsets v0-v1 (KIP-932; the Java Admin's listShareGroupOffsets): each share
group's start offsets, for the partitions asked for or (topics null) every one with state; v1
adds each partition's lag (KIP-1226). The work is broker/groups/share/share_group_admin.py's.

As Kafka's handler: NOT_COORDINATOR for a group coordinated elsewhere, GROUP_AUTHORIZATION_FAILED
without DESCRIBE on the group; a topic without DESCRIBE answers TOPIC_AUTHORIZATION_FAILED on its
partitions. An unknown topic or a partition without state is no error: start offset -1.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.groups.share.share_group_admin import UNINITIALIZED
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.features import SHARE_VERSION, switched_off


def refusal(ctx: ApiContext, group_id: str, operation: Operation) -> ErrorCode | None:
    """Why a share-group offsets request is refused for the whole group (None when it is not), as
    Kafka's three handlers check it: share groups switched off (share.version 0), an empty id,
    another coordinator, no `operation` on it."""
    if switched_off(ctx.features, SHARE_VERSION):
        return ErrorCode.unsupported_version
    if not group_id:
        return ErrorCode.invalid_group_id
    code = ctx.share_groups.coordinator_error(group_id)
    if not code and not ctx.authorizer.group_allowed(operation, group_id):
        code = ErrorCode.group_authorization_failed
    return code


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    group_cls, topic_cls = nested(cls, "DescribeShareGroupOffsetsResponseGroup"), nested(
        cls, "DescribeShareGroupOffsetsResponseTopic")
    part_cls = nested(cls, "DescribeShareGroupOffsetsResponsePartition")
    groups = []
    for g in request.groups:
        code = refusal(ctx, g.group_id, Operation.DESCRIBE)
        if code:
            groups.append(make(group_cls, group_id=g.group_id, topics=(), error_code=code, error_message=None))
            continue
        wanted = None if g.topics is None else [(t.topic_name, list(t.partitions)) for t in g.topics]
        denied = ctx.authorizer.denied_names(Operation.DESCRIBE, ResourceType.TOPIC, [t for t, _ in wanted or ()])
        described = await ctx.share_groups.describe_offsets(
            g.group_id, None if wanted is None else [w for w in wanted if w[0] not in denied])
        if wanted is None:  # all topics: those it may not see are left out
            hidden = ctx.authorizer.denied_names(Operation.DESCRIBE, ResourceType.TOPIC, [t.name for t in described])
            described = [t for t in described if t.name not in hidden]
        topics = [make(topic_cls, topic_name=t.name, topic_id=t.topic_id, partitions=tuple(
            make(part_cls, partition_index=p.partition, start_offset=p.start_offset, leader_epoch=p.leader_epoch,
                 lag=p.lag, error_code=p.error, error_message=p.message) for p in t.partitions))
            for t in described]
        topics += [make(topic_cls, topic_name=name, topic_id=None, partitions=tuple(
            make(part_cls, partition_index=i, start_offset=UNINITIALIZED, leader_epoch=0, lag=UNINITIALIZED,
                 error_code=ErrorCode.topic_authorization_failed, error_message=None) for i in indexes))
            for name, indexes in (wanted or ()) if name in denied]
        groups.append(make(group_cls, group_id=g.group_id, topics=tuple(topics), error_code=ErrorCode.none,
                           error_message=None))
    return make(cls, throttle_time=NO_THROTTLE, groups=tuple(groups))
