"""JoinGroup: parked until the join phase ends; the leader's answer lists every member. A member
joining a consumer-protocol group is answered at once from it (groups/consumer/classic_members.py).
A group id a share or streams group holds is INCONSISTENT_GROUP_PROTOCOL with no member id, as
Kafka's GroupMetadataManager.classicGroupJoin answers for a group of another type (the group
service decides: broker/groups/group_service.py)."""

from __future__ import annotations

import datetime

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.net.client_address import client_host
from broker.groups.join_messages import JoinRequest
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


def _ms(value: datetime.timedelta | int) -> int:
    return int(value.total_seconds() * 1000) if isinstance(value, datetime.timedelta) else int(value)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    member_cls = nested(cls, "JoinGroupResponseMember")
    session = _ms(request.session_timeout)
    # v0 has no rebalance timeout: Kafka uses the session timeout for both.
    rebalance = _ms(getattr(request, "rebalance_timeout", request.session_timeout))
    if not ctx.authorizer.group_allowed(Operation.READ, request.group_id):  # ACLs, as Kafka's handleJoinGroupRequest
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.group_authorization_failed, generation_id=-1,
                    protocol_type=None, protocol_name=None if header.api_version >= 7 else "", leader="",
                    skip_assignment=False, member_id=request.member_id, members=())
    req = JoinRequest(
        group_id=request.group_id, member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        client_id=header.client_id or "", client_host=client_host.get(),
        session_timeout_ms=session, rebalance_timeout_ms=rebalance,
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        require_known_member=header.api_version >= 4,
    )
    result = await ctx.groups.join(req)
    members = tuple(make(member_cls, member_id=m, group_instance_id=i, metadata=md) for m, i, md in result.members)
    code = result.error
    ok = code is ErrorCode.none
    return make(
        cls, throttle_time=NO_THROTTLE, error_code=code, generation_id=result.generation,
        protocol_type=result.protocol_type if ok else None,
        # Before v7 the protocol name is not nullable: an error answer carries "".
        protocol_name=result.protocol_name if ok else (None if header.api_version >= 7 else ""),
        leader=result.leader, skip_assignment=False, member_id=result.member_id, members=members,
    )
