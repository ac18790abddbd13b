"""DescribeGroups: state, protocol and members; a group never seen is reported Dead, as Kafka does
(so is a consumer-protocol, share or streams group: ConsumerGroupDescribe, ShareGroupDescribe and
StreamsGroupDescribe describe those), and from v6 (KIP-1043)
Dead with GROUP_ID_NOT_FOUND and Kafka's message beside it (GroupMetadataManager.describeGroups:
clients reading only the state still read Dead); one this broker does not coordinate gets
NOT_COORDINATOR with an empty description."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.groups.group_service import NotFound
from broker.groups.state import GroupState
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested

UNKNOWN_OPERATIONS = -(2**31)
NOT_FOUND_FROM = 6


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    group_cls, member_cls = nested(cls, "DescribedGroup"), nested(cls, "DescribedGroupMember")
    described = []
    for group_id in request.groups:
        not_here = ctx.groups.coordinator_error(group_id)
        if not ctx.authorizer.group_allowed(Operation.DESCRIBE, group_id):  # ACLs, as Kafka's handleDescribeGroupsRequest
            not_here = ErrorCode.group_authorization_failed
        if not_here:
            described.append(make(group_cls, error_code=not_here, group_id=group_id, group_state="",
                                  protocol_type="", protocol_data="", members=(),
                                  authorized_operations=UNKNOWN_OPERATIONS))
            continue
        group = ctx.groups.classic_group(group_id)
        if isinstance(group, NotFound):
            v6 = header.api_version >= NOT_FOUND_FROM
            described.append(make(group_cls, error_code=ErrorCode.group_id_not_found if v6 else ErrorCode.none,
                                  error_message=group.message if v6 else None, group_id=group_id,
                                  group_state=GroupState.DEAD.value, protocol_type="", protocol_data="",
                                  members=(), authorized_operations=UNKNOWN_OPERATIONS))
            continue
        # Member metadata means something once a protocol is chosen; assignments once synced.
        chosen = group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
        members = tuple(
            make(member_cls, member_id=m.member_id, group_instance_id=m.group_instance_id,
                 client_id=m.client_id, client_host=m.client_host,
                 member_metadata=m.metadata_for(group.protocol_name) if chosen else b"",
                 member_assignment=m.assignment if group.state is GroupState.STABLE else b"")
            for m in group.members.values()
        )
        described.append(make(
            group_cls, error_code=ErrorCode.none, group_id=group_id, group_state=group.state.value,
            protocol_type=group.protocol_type or "", protocol_data=(group.protocol_name or "") if chosen else "",
            members=members, authorized_operations=UNKNOWN_OPERATIONS,
        ))
    return make(cls, throttle_time=NO_THROTTLE, groups=tuple(described))
