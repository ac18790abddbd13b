"""ShareGroupDescribe (KIP-932) v1: a share group's epochs, assignor and members, each with its
assignment (topic ids and names).

As Kafka: NOT_COORDINATOR for a group coordinated elsewhere, GROUP_AUTHORIZATION_FAILED without
DESCRIBE on it, GROUP_ID_NOT_FOUND for a group that does not exist or is not a share group.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.features import OFF_MESSAGE, SHARE_VERSION, switched_off
from broker.api.response_builder import NO_THROTTLE, make, nested

UNKNOWN_OPERATIONS = -(2**31)
ASSIGNOR = "simple"  # Kafka's only share-group assignor (broker/groups/share/simple_assignor.py)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    shares = ctx.share_groups
    cls = response_for(header)
    group_cls = nested(cls, "DescribedGroup")
    described = []
    for group_id in request.group_ids:
        code = shares.coordinator_error(group_id)
        if not ctx.authorizer.group_allowed(Operation.DESCRIBE, group_id):
            code = ErrorCode.group_authorization_failed
        group = shares.group(group_id)
        message = None
        if switched_off(ctx.features, SHARE_VERSION):
            code, message = ErrorCode.unsupported_version, OFF_MESSAGE
        elif not code and group is None:
            code = ErrorCode.group_id_not_found
            message = (f"Group {group_id} is not a share group." if shares.other_group_kind(group_id)
                       else f"Group {group_id} not found.")
        if code or group is None:
            described.append(make(group_cls, error_code=code, error_message=message, group_id=group_id,
                                  group_state="", group_epoch=-1, assignment_epoch=-1, assignor_name="", members=(),
                                  authorized_operations=UNKNOWN_OPERATIONS))
            continue
        by_id = ctx.topics.by_id
        tp_cls, assignment_cls = nested(cls, "TopicPartitions"), nested(cls, "Assignment")
        members = tuple(
            make(nested(cls, "Member"), member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.epoch,
                 client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=m.subscribed,
                 assignment=make(assignment_cls, topic_partitions=tuple(
                     make(tp_cls, topic_id=t, topic_name=by_id[t].name if t in by_id else "",
                          partitions=tuple(sorted(ps)))
                     for t, ps in sorted(m.assignment.items(), key=lambda kv: str(kv[0])))))
            for m in group.members.values())
        described.append(make(group_cls, error_code=ErrorCode.none, error_message=None, group_id=group_id,
                              group_state=group.state, group_epoch=group.epoch,
                              assignment_epoch=group.assignment_epoch, assignor_name=ASSIGNOR, members=members,
                              authorized_operations=UNKNOWN_OPERATIONS))
    return make(cls, throttle_time=NO_THROTTLE, groups=tuple(described))
