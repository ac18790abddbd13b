"""ShareGroupHeartbeat (KIP-932) v1: join, heartbeat and leave a share group; the answer carries the
member's epoch and, when it changed, its assignment (broker/groups/share/share_coordinator.py).

v1 only: v0 was Kafka 4.0's early-access version, which Kafka 4.1 dropped. The member names itself
(a UUID the client keeps for its life). ACLs as Kafka's handleShareGroupHeartbeat: READ on the
group, DESCRIBE on each subscribed topic.
"""

from __future__ import annotations

import datetime

from wire.protocol import response_for

from broker.net.client_address import client_host
from broker.security.acl.checks import denied_names, group_allowed
from broker.security.acl.model import Operation, ResourceType
from broker.handlers.response_builder import NO_THROTTLE, error, make, nested


async def handle(broker, header, request):
    cls = response_for(header)
    names = request.subscribed_topic_names
    if not group_allowed(broker, Operation.READ, request.group_id):
        return _refused(cls, "group_authorization_failed", None)
    if names and denied_names(broker, Operation.DESCRIBE, ResourceType.TOPIC, names):
        return _refused(cls, "topic_authorization_failed", None)
    result = await broker.share_groups.heartbeat(
        request.group_id, request.member_id, request.member_epoch, None if names is None else tuple(names),
        request.rack_id, header.client_id or "", client_host.get())
    if result.error != "none":
        return _refused(cls, result.error, result.message)
    assignment = None
    if result.assignment is not None:
        tp_cls = nested(cls, "TopicPartitions")
        topics = tuple(make(tp_cls, topic_id=t, partitions=tuple(sorted(ps)))
                       for t, ps in sorted(result.assignment.items(), key=lambda kv: str(kv[0])))
        assignment = make(nested(cls, "Assignment"), topic_partitions=topics)
    return make(cls, throttle_time=NO_THROTTLE, error_code=error("none"), error_message=None,
                member_id=result.member_id, member_epoch=result.member_epoch,
                heartbeat_interval=datetime.timedelta(milliseconds=result.heartbeat_interval_ms),
                assignment=assignment)


def _refused(cls, code: str, message: str | None):
    return make(cls, throttle_time=NO_THROTTLE, error_code=error(code), error_message=message, member_id=None,
                member_epoch=0, heartbeat_interval=datetime.timedelta(0), assignment=None)
