"""DeleteShareGroupOffsets v0 (KIP-932; the Java Admin's deleteShareGroupOffsets): a topic's
share-partition states removed from a share group (broker/groups/share/share_group_admin.py), so
its next consumer starts afresh at share.auto.offset.reset. The group must exist (GROUP_ID_NOT_FOUND)
and be empty (NON_EMPTY_GROUP).

As Kafka's handler: NOT_COORDINATOR for a group coordinated elsewhere, GROUP_AUTHORIZATION_FAILED
without DELETE on the group; a topic without READ answers TOPIC_AUTHORIZATION_FAILED, an unknown
one UNKNOWN_TOPIC_OR_PARTITION, each on its own entry.
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
    topic_cls = nested(cls, "DeleteShareGroupOffsetsResponseTopic")
    code = refusal(ctx, request.group_id, Operation.DELETE)
    if code:
        return make(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=None, responses=())
    names = [t.topic_name for t in request.topics]
    denied = ctx.authorizer.denied_names(Operation.READ, ResourceType.TOPIC, names)
    deleted = await ctx.share_groups.delete_offsets(request.group_id, [n for n in names if n not in denied])
    if isinstance(deleted, Refused):
        return make(cls, throttle_time=NO_THROTTLE, error_code=deleted.error, error_message=deleted.message,
                    responses=())
    responses = [make(topic_cls, topic_name=t.name, topic_id=t.topic_id, error_code=t.error,
                      error_message=t.message) for t in deleted]
    responses += [make(topic_cls, topic_name=n, topic_id=NO_TOPIC_ID, error_code=ErrorCode.topic_authorization_failed,
                       error_message=None) for n in names if n in denied]
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                responses=tuple(responses))
