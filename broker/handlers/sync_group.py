"""SyncGroup: the leader hands in the assignment; every member gets its own part."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    if not ctx.authorizer.group_allowed(Operation.READ, request.group_id):  # ACLs, as Kafka's handleSyncGroupRequest
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.group_authorization_failed,
                    protocol_type=None, protocol_name=None, assignment=b"")
    assignments = {a.member_id: bytes(a.assignment) for a in request.assignments}
    result = await ctx.groups.sync(
        request.group_id, request.generation_id, request.member_id,
        getattr(request, "group_instance_id", None), getattr(request, "protocol_type", None),
        getattr(request, "protocol_name", None), assignments,
    )
    return make(cls, throttle_time=NO_THROTTLE, error_code=result.error, protocol_type=result.protocol_type,
                protocol_name=result.protocol_name, assignment=result.assignment)
