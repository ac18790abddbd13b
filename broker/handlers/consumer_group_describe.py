"""ConsumerGroupDescribe (KIP-848) v0-v1: a consumer-protocol group's epochs, assignor and
members, each with its current and target assignment (topic ids and names).

As Kafka: NOT_COORDINATOR for a group coordinated elsewhere, GROUP_AUTHORIZATION_FAILED
without DESCRIBE on it, GROUP_ID_NOT_FOUND for a group that does not exist or is a classic
group. v1 adds each member's type (1: consumer protocol).
"""

from __future__ import annotations

from typing import Any

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.topic_lookup import TopicLookup
from broker.groups.consumer.consumer_group import ConsumerGroup
from broker.groups.consumer.topic_partitions import Assignment
from broker.groups.group_service import NotFound
from broker.security.acl.model import Operation
from broker.features import GROUP_VERSION, OFF_MESSAGE, switched_off
from broker.api.response_builder import NO_THROTTLE, make, nested

UNKNOWN_OPERATIONS = -(2**31)
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1  # v1's member type: which protocol the member speaks


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    described = []
    for group_id in request.group_ids:
        code = ctx.groups.coordinator_error(group_id)
        if not ctx.authorizer.group_allowed(Operation.DESCRIBE, group_id):
            code = ErrorCode.group_authorization_failed
        group = ctx.groups.consumer_group(group_id)
        message = None
        if switched_off(ctx.features, GROUP_VERSION):
            code, message = ErrorCode.unsupported_version, OFF_MESSAGE
        elif not code and isinstance(group, NotFound):
            code, message = ErrorCode.group_id_not_found, group.message
        if code or isinstance(group, NotFound):
            described.append(make(nested(cls, "DescribedGroup"), error_code=code, error_message=message,
                                  group_id=group_id, group_state="", group_epoch=-1, assignment_epoch=-1,
                                  assignor_name="", members=(), authorized_operations=UNKNOWN_OPERATIONS))
            continue
        described.append(_describe(ctx.topics, cls, ctx.groups.consumer_assignor(group), group))
    return make(cls, throttle_time=NO_THROTTLE, groups=tuple(described))


def _describe(topics: TopicLookup, cls: Any, assignor: str, group: ConsumerGroup) -> Any:
    by_id = topics.by_id
    tp_cls, assignment_cls = nested(cls, "TopicPartitions"), nested(cls, "Assignment")

    def assignment(a: Assignment) -> Any:
        named = tuple(make(tp_cls, topic_id=t, topic_name=by_id[t].name if t in by_id else "",
                           partitions=tuple(sorted(ps)))
                      for t, ps in sorted(a.items(), key=lambda kv: str(kv[0])))
        return make(assignment_cls, topic_partitions=named)

    members = tuple(
        make(nested(cls, "Member"), member_id=m.member_id, instance_id=m.metadata.instance_id,
             rack_id=m.metadata.rack_id, member_epoch=m.current.epoch, client_id=m.metadata.client_id,
             client_host=m.metadata.client_host, subscribed_topic_names=m.metadata.subscribed_topic_names,
             subscribed_topic_regex=m.metadata.subscribed_topic_regex, assignment=assignment(m.current.assigned),
             target_assignment=assignment(group.targets.get(m.member_id, {})),
             member_type=CLASSIC_MEMBER if m.metadata.classic else CONSUMER_MEMBER)
        for m in group.members.values())
    return make(nested(cls, "DescribedGroup"), error_code=ErrorCode.none, error_message=None, group_id=group.group_id,
                group_state=group.state.value, group_epoch=group.epoch, assignment_epoch=group.assignment_epoch,
                assignor_name=assignor, members=members, authorized_operations=UNKNOWN_OPERATIONS)
