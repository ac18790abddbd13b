"""Heartbeat: keeps a member's session alive; tells it when a rebalance has begun."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.groups.consumer import classic_members
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    broker = ctx.broker  # until this handler is moved onto ctx's typed services
    if not broker.authorizer.group_allowed(Operation.READ, request.group_id):  # ACLs, as Kafka's handleHeartbeatRequest
        code = ErrorCode.group_authorization_failed
    elif (consumer_group := broker.consumer_groups.groups.get(request.group_id)) is not None:
        code = classic_members.heartbeat(broker.consumer_groups, consumer_group, request.generation_id,
                                         request.member_id)
    else:
        code = broker.groups.heartbeat(request.group_id, request.generation_id, request.member_id,
                                       getattr(request, "group_instance_id", None))
    return make(response_for(header), throttle_time=NO_THROTTLE, error_code=code)
