"""Heartbeat: keeps a member's session alive; tells it when a rebalance has begun."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    if not ctx.authorizer.group_allowed(Operation.READ, request.group_id):  # ACLs, as Kafka's handleHeartbeatRequest
        code = ErrorCode.group_authorization_failed
    else:
        code = ctx.groups.heartbeat(request.group_id, request.generation_id, request.member_id,
                                    getattr(request, "group_instance_id", None))
    return make(response_for(header), throttle_time=NO_THROTTLE, error_code=code)
