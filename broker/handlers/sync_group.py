"""SyncGroup: the leader hands in the assignment; every member gets its own part."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.groups.consumer import classic_members
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    broker = ctx.broker  # until this handler is moved onto ctx's typed services
    cls = response_for(header)
    if not broker.authorizer.group_allowed(Operation.READ, request.group_id):  # ACLs, as Kafka's handleSyncGroupRequest
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.group_authorization_failed,
                    protocol_type=None, protocol_name=None, assignment=b"")
    consumer_group = broker.consumer_groups.groups.get(request.group_id)
    if consumer_group is not None:  # a classic member of a consumer-protocol group
        protocol_name = getattr(request, "protocol_name", None)
        code, assignment = classic_members.sync(
            broker.consumer_groups, consumer_group, request.generation_id, request.member_id,
            getattr(request, "protocol_type", None), protocol_name)
        ok = code is ErrorCode.none
        return make(cls, throttle_time=NO_THROTTLE, error_code=code,
                    protocol_type="consumer" if ok else None, protocol_name=protocol_name if ok else None,
                    assignment=assignment)
    assignments = {a.member_id: bytes(a.assignment) for a in request.assignments}
    code, assignment = await broker.groups.sync(
        request.group_id, request.generation_id, request.member_id,
        getattr(request, "group_instance_id", None), getattr(request, "protocol_type", None),
        getattr(request, "protocol_name", None), assignments,
    )
    group = broker.groups.groups.get(request.group_id)
    ok = code is ErrorCode.none and group is not None
    return make(cls, throttle_time=NO_THROTTLE, error_code=code,
                protocol_type=group.protocol_type if ok else None,
                protocol_name=group.protocol_name if ok else None, assignment=assignment)
