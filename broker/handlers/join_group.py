"""JoinGroup: parked until the join phase ends; the leader's answer lists every member. A member
joining a consumer-protocol group is answered at once from it (groups/consumer/classic_members.py).
A group id a share group holds is INCONSISTENT_GROUP_PROTOCOL with no member id, as Kafka's
GroupMetadataManager.classicGroupJoin answers for a group of another type."""

from __future__ import annotations

import datetime

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.net.client_address import client_host
from broker.groups.join_messages import JoinRequest, JoinResult
from broker.groups.consumer import classic_apis, classic_members
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


def _ms(value) -> int:
    return int(value.total_seconds() * 1000) if isinstance(value, datetime.timedelta) else int(value)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    broker = ctx.broker  # until this handler is moved onto ctx's typed services
    cls = response_for(header)
    member_cls = nested(cls, "JoinGroupResponseMember")
    session = _ms(request.session_timeout)
    # v0 has no rebalance timeout: Kafka uses the session timeout for both.
    rebalance = _ms(getattr(request, "rebalance_timeout", request.session_timeout))
    if not broker.authorizer.group_allowed(Operation.READ, request.group_id):  # ACLs, as Kafka's handleJoinGroupRequest
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.group_authorization_failed, generation_id=-1,
                    protocol_type=None, protocol_name=None if header.api_version >= 7 else "", leader="",
                    skip_assignment=False, member_id=request.member_id, members=())
    # A streams group with members keeps its id, as Kafka's classicGroupJoin; an empty one gives it up.
    streams = broker.streams_groups.groups.get(request.group_id)
    if streams is not None and not streams.members and not broker.groups.coordinator_error(request.group_id):
        await broker.streams_groups.delete(request.group_id)
    taken = request.group_id in broker.share_groups.groups or request.group_id in broker.streams_groups.groups
    if taken and not broker.groups.coordinator_error(request.group_id):
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.inconsistent_group_protocol, generation_id=-1,
                    protocol_type=None, protocol_name=None if header.api_version >= 7 else "", leader="",
                    skip_assignment=False, member_id="", members=())
    req = JoinRequest(
        group_id=request.group_id, member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        client_id=header.client_id or "", client_host=client_host.get(),
        session_timeout_ms=session, rebalance_timeout_ms=rebalance,
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        require_known_member=header.api_version >= 4,
    )
    consumer_group = broker.consumer_groups.groups.get(request.group_id)
    if consumer_group is not None and consumer_group.members:  # Kafka 4's mixed groups
        result = await classic_members.join(broker.consumer_groups, consumer_group, req)
    else:
        conflict = await classic_apis.make_room_for_classic(broker.consumer_groups, request.group_id)
        result = JoinResult(conflict, request.member_id) if conflict else await broker.groups.join(req)
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
