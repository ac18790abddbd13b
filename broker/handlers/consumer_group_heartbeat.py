"""ConsumerGroupHeartbeat (KIP-848) v0-v1: join, heartbeat and leave a consumer-protocol group;
the answer carries the member's epoch and, when it changed, its assignment.

v0 lets the coordinator name a joining member; from v1 the member names itself (and may
subscribe by regex). ACLs as Kafka's handleConsumerGroupHeartbeat: READ on the group, and
DESCRIBE on each topic it subscribes to by name. A group id a share or streams group holds is
GROUP_ID_NOT_FOUND, as Kafka's GroupMetadataManager answers for a group of another type.
"""

from __future__ import annotations

import datetime
from typing import Any, Protocol

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.net.client_address import client_host
from broker.groups.consumer.heartbeat_request import HeartbeatRequest
from broker.groups.consumer.topic_partitions import Assignment, of
from broker.security.acl.model import Operation, ResourceType
from broker.features import GROUP_VERSION, OFF_MESSAGE, switched_off
from broker.api.response_builder import NO_THROTTLE, make, nested


class MemberAnswer(Protocol):
    """A consumer or share group heartbeat's result, as heartbeat_answer reads it."""

    @property
    def member_id(self) -> str | None: ...

    @property
    def member_epoch(self) -> int: ...

    @property
    def heartbeat_interval_ms(self) -> int: ...

    @property
    def assignment(self) -> Assignment | None:
        """None: unchanged since the last answer, not sent."""


def _ms(value: datetime.timedelta | int) -> int:
    return int(value.total_seconds() * 1000) if isinstance(value, datetime.timedelta) else int(value)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    names = request.subscribed_topic_names
    if switched_off(ctx.features, GROUP_VERSION):
        return heartbeat_answer(cls, ErrorCode.unsupported_version, OFF_MESSAGE)
    if not ctx.authorizer.group_allowed(Operation.READ, request.group_id):
        return heartbeat_answer(cls, ErrorCode.group_authorization_failed, None)
    if names and ctx.authorizer.denied_names(Operation.DESCRIBE, ResourceType.TOPIC, names):
        return heartbeat_answer(cls, ErrorCode.topic_authorization_failed, None)
    owned = None if request.topic_partitions is None else of(
        (t.topic_id, p) for t in request.topic_partitions for p in t.partitions)
    result = await ctx.groups.consumer_heartbeat(HeartbeatRequest(
        group_id=request.group_id, member_id=request.member_id, member_epoch=request.member_epoch,
        version=header.api_version, instance_id=request.instance_id, rack_id=request.rack_id,
        rebalance_timeout_ms=_ms(request.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor, owned=owned,
        client_id=header.client_id or "", client_host=client_host.get(),
    ))
    return heartbeat_answer(cls, result.error, result.message, result)


def heartbeat_answer(cls: Any, code: ErrorCode, message: str | None, result: MemberAnswer | None = None) -> Answer:
    """A ConsumerGroupHeartbeat or ShareGroupHeartbeat answer (their shapes are the same): the
    error alone, or the member's id, epoch, interval and the assignment when it changed."""
    if result is None or code is not ErrorCode.none:
        return make(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=message, member_id=None,
                    member_epoch=0, heartbeat_interval=datetime.timedelta(0), assignment=None)
    assignment = None
    if result.assignment is not None:
        tp_cls = nested(cls, "TopicPartitions")
        topics = tuple(make(tp_cls, topic_id=t, partitions=tuple(sorted(ps)))
                       for t, ps in sorted(result.assignment.items(), key=lambda kv: str(kv[0])))
        assignment = make(nested(cls, "Assignment"), topic_partitions=topics)
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                member_id=result.member_id, member_epoch=result.member_epoch,
                heartbeat_interval=datetime.timedelta(milliseconds=result.heartbeat_interval_ms),
                assignment=assignment)
