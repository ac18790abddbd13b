"""ShareGroupHeartbeat (KIP-932) v1: join, heartbeat and leave a share group; the answer carries the
member's epoch and, when it changed, its assignment (broker/groups/share/share_coordinator.py).

v1 only: v0 was Kafka 4.0's early-access version, which Kafka 4.1 dropped. The member names itself
(a UUID the client keeps for its life). ACLs as Kafka's handleShareGroupHeartbeat: READ on the
group, DESCRIBE on each subscribed topic.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.features import OFF_MESSAGE, SHARE_VERSION, switched_off
from broker.net.client_address import client_host
from broker.security.acl.model import Operation, ResourceType
from broker.handlers.consumer_group_heartbeat import heartbeat_answer


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    names = request.subscribed_topic_names
    if switched_off(ctx.features, SHARE_VERSION):
        return heartbeat_answer(cls, ErrorCode.unsupported_version, OFF_MESSAGE)
    if not ctx.authorizer.group_allowed(Operation.READ, request.group_id):
        return heartbeat_answer(cls, ErrorCode.group_authorization_failed, None)
    if names and ctx.authorizer.denied_names(Operation.DESCRIBE, ResourceType.TOPIC, names):
        return heartbeat_answer(cls, ErrorCode.topic_authorization_failed, None)
    result = await ctx.share_groups.heartbeat(
        request.group_id, request.member_id, request.member_epoch, None if names is None else tuple(names),
        request.rack_id, header.client_id or "", client_host.get())
    return heartbeat_answer(cls, result.error, result.message, result)
