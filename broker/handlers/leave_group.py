"""LeaveGroup: one member (v0-v2) or a batch of members, static ones by instance id (v3+)."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    if not ctx.authorizer.group_allowed(Operation.READ, request.group_id):  # ACLs, as Kafka's handleLeaveGroupRequest
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.group_authorization_failed, members=())
    if header.api_version < 3:
        top, codes = await ctx.groups.leave(request.group_id, [(request.member_id, None)])
        return make(cls, throttle_time=NO_THROTTLE, error_code=codes[0] if codes else top)
    leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    top, codes = await ctx.groups.leave(request.group_id, leaving)
    member_cls = nested(cls, "MemberResponse")
    members = tuple(make(member_cls, member_id=m, group_instance_id=i, error_code=c)
                    for (m, i), c in zip(leaving, codes))
    return make(cls, throttle_time=NO_THROTTLE, error_code=top, members=members)
