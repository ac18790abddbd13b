"""ListGroups: every live group; v4 filters by state, v5 by type: classic, or consumer for a
KIP-848 group (whose classic object, if any, only holds its committed offsets), share for a
KIP-932 share group (protocol type "share", as Kafka lists them), streams for a KIP-1071
streams group (protocol type "streams")."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    listed_cls = nested(cls, "ListedGroup")
    states = {s.lower() for s in getattr(request, "states_filter", ())}
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    groups = []
    # ACLs, as Kafka's handleListGroupsRequest: DESCRIBE on the cluster lists all, else those described
    every = ctx.authorizer.cluster_allowed(Operation.DESCRIBE)
    for group_id, protocol_type, state, group_type in ctx.groups.listed():
        visible = every or ctx.authorizer.group_allowed(Operation.DESCRIBE, group_id)
        if not visible or (states and state.lower() not in states) or (types and group_type not in types):
            continue
        groups.append(make(listed_cls, group_id=group_id, protocol_type=protocol_type, group_state=state,
                           group_type=group_type))
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, groups=tuple(groups))
