"""ShareAcknowledge (KIP-932) v1-v2: a share group member's acknowledgements (ACCEPT, RELEASE, REJECT,
GAP, and from v2 RENEW, KIP-1222) of records it acquired, outside a fetch. Each partition's batches are applied and the
partition's state written before the answer (share_partitions.py); an offset the member does not
hold is INVALID_RECORD_STATE for its partition.

It works within the member's share session and moves its epoch on; it cannot open one
(INVALID_SHARE_SESSION_EPOCH for epoch 0). Epoch -1, a closing consumer's last request,
acknowledges, then closes the session and releases what the member still holds in it.
v2's response says how long renewed records are now held (the group's lock duration).
"""

from __future__ import annotations

import datetime
from typing import Any

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.share_group_service import ShareGroupService
from broker.groups.share.share_sessions import CLOSE_EPOCH, SessionRefused
from broker.security.acl.model import Operation
from broker.handlers.current_leader import LeaderHint, node_endpoints
from broker.features import OFF_MESSAGE, SHARE_VERSION, switched_off
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.handlers.share_partition_access import acknowledge, hint, leader, target, unreadable_topics


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    shares = ctx.share_groups
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    if switched_off(ctx.features, SHARE_VERSION):
        return _top(shares, header, cls, group_id, ErrorCode.unsupported_version, OFF_MESSAGE)
    if not group_id or not member_id:
        return _top(shares, header, cls, group_id, ErrorCode.invalid_request, "GroupId and MemberId must be set.")
    if not ctx.authorizer.group_allowed(Operation.READ, group_id):
        return _top(shares, header, cls, group_id, ErrorCode.group_authorization_failed, None)
    try:
        session = shares.session_for_acknowledge(group_id, member_id, epoch)
    except SessionRefused as exc:
        return _top(shares, header, cls, group_id, exc.error, str(exc))
    unreadable = unreadable_topics(ctx.topics, ctx.authorizer, {t.topic_id for t in request.topics})
    topic_cls, part_cls = nested(cls, "ShareAcknowledgeTopicResponse"), nested(cls, "PartitionData")
    topics: list[Any] = []
    hints: list[LeaderHint] = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            code, message = await acknowledge(shares, ctx.topics, group_id, member_id, t.topic_id, p.partition_index,
                                              p.acknowledgement_batches, unreadable, header.api_version)
            found = target(ctx.topics, t.topic_id, p.partition_index, unreadable)
            h = hint(ctx.view, code, found.topic, p.partition_index, found.partition)
            if h is not None:
                hints.append(h)
            parts.append(make(part_cls, partition_index=p.partition_index, error_code=code,
                              error_message=message, current_leader=leader(cls, h)))
        topics.append(make(topic_cls, topic_id=t.topic_id, partitions=tuple(parts)))
    if epoch == CLOSE_EPOCH:
        await shares.close_session(session)
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                responses=tuple(topics), node_endpoints=node_endpoints(ctx.view, cls, hints),
                **_lock_timeout(shares, header, group_id))


def _lock_timeout(shares: ShareGroupService, header: RequestHeader, group_id: str) -> dict[str, datetime.timedelta]:
    """v2's acquisition_lock_timeout: the group's share.record.lock.duration.ms."""
    if header.api_version < 2:
        return {}
    return {"acquisition_lock_timeout": datetime.timedelta(milliseconds=shares.config_of(group_id).lock_ms)}


def _top(shares: ShareGroupService, header: RequestHeader, cls: type, group_id: str, code: ErrorCode,
         message: str | None) -> Answer:
    return make(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=message, responses=(),
                node_endpoints=(), **_lock_timeout(shares, header, group_id))
