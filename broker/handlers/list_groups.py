"""ListGroups: every live group; v4 filters by state, v5 by type: classic, or consumer for a
KIP-848 group (whose classic object, if any, only holds its committed offsets), share for a
KIP-932 share group (protocol type "share", as Kafka lists them), streams for a KIP-1071
streams group (protocol type "streams")."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.groups.state import GroupState
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    broker = ctx.broker  # until this handler is moved onto ctx's typed services
    cls = response_for(header)
    listed_cls = nested(cls, "ListedGroup")
    states = {s.lower() for s in getattr(request, "states_filter", ())}
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    groups = []
    # ACLs, as Kafka's handleListGroupsRequest: DESCRIBE on the cluster lists all, else those described
    visible = (lambda g: True) if broker.authorizer.cluster_allowed(Operation.DESCRIBE) else (
        lambda g: broker.authorizer.group_allowed(Operation.DESCRIBE, g))
    consumer_groups = broker.consumer_groups.groups
    listed = [(g.group_id, g.protocol_type or "", g.state.value, "classic") for g in broker.groups.groups.values()
              if g.state is not GroupState.DEAD and g.group_id not in consumer_groups
              and g.group_id not in broker.streams_groups.groups]
    listed += [(g.group_id, "consumer", g.state.value, "consumer") for g in consumer_groups.values()]
    listed += [(g.group_id, "share", g.state, "share") for g in broker.share_groups.groups.values()]
    listed += [(g.group_id, "streams", g.state.value, "streams") for g in broker.streams_groups.groups.values()]
    for group_id, protocol_type, state, group_type in listed:
        if not visible(group_id) or (states and state.lower() not in states) or (types and group_type not in types):
            continue
        groups.append(make(listed_cls, group_id=group_id, protocol_type=protocol_type, group_state=state,
                           group_type=group_type))
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, groups=tuple(groups))
