"""AlterShareGroupOffsets v0 (KIP-932; the Java Admin's alterShareGroupOffsets): each partition's
start offset set, written through the share coordinator as the share-partition's new state
(broker/groups/share/share_group_admin.py). The group must be empty (NON_EMPTY_GROUP).

As Kafka's handler: NOT_COORDINATOR for a group coordinated elsewhere, GROUP_AUTHORIZATION_FAILED
without READ on the group (the whole answer); a topic without READ answers
TOPIC_AUTHORIZATION_FAILED on its partitions, an unknown one UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.groups.share.share_group_admin import NO_TOPIC_ID, Refused
from broker.security.acl.model import Operation, ResourceType
from broker.handlers.describe_share_group_offsets import refusal
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    topic_cls, part_cls = nested(cls, "AlterShareGroupOffsetsResponseTopic"), nested(
        cls, "AlterShareGroupOffsetsResponsePartition")
    code = refusal(ctx, request.group_id, Operation.READ)
    if code:
        return make(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=None, responses=())
    denied = ctx.authorizer.denied_names(Operation.READ, ResourceType.TOPIC, [t.topic_name for t in request.topics])
    altered = await ctx.share_groups.alter_offsets(request.group_id, [
        (t.topic_name, [(p.partition_index, p.start_offset) for p in t.partitions])
        for t in request.topics if t.topic_name not in denied])
    if isinstance(altered, Refused):
        return make(cls, throttle_time=NO_THROTTLE, error_code=altered.error, error_message=altered.message,
                    responses=())
    responses = [make(topic_cls, topic_name=t.name, topic_id=t.topic_id, partitions=tuple(
        make(part_cls, partition_index=p.partition, error_code=p.error, error_message=p.message)
        for p in t.partitions)) for t in altered]
    responses += [make(topic_cls, topic_name=t.topic_name, topic_id=NO_TOPIC_ID, partitions=tuple(
        make(part_cls, partition_index=p.partition_index, error_code=ErrorCode.topic_authorization_failed,
             error_message=None) for p in t.partitions)) for t in request.topics if t.topic_name in denied]
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                responses=tuple(responses))
