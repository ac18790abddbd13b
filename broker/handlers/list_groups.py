"""ListGroups: every live group; v4 filters by state, v5 by type (all groups here are classic)."""

from __future__ import annotations

from wire.protocol import response_for

from broker.groups.state import GroupState
from broker.security.acl.checks import cluster_allowed, group_allowed
from broker.security.acl.model import Operation
from broker.handlers.response_builder import NO_THROTTLE, error, make, nested


async def handle(broker, header, request):
    cls = response_for(header)
    listed_cls = nested(cls, "ListedGroup")
    states = {s.lower() for s in getattr(request, "states_filter", ())}
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    groups = []
    # ACLs, as Kafka's handleListGroupsRequest: DESCRIBE on the cluster lists all, else those described
    visible = (lambda g: True) if cluster_allowed(broker, Operation.DESCRIBE) else (
        lambda g: group_allowed(broker, Operation.DESCRIBE, g))
    for group in broker.groups.groups.values():
        if group.state is GroupState.DEAD or not visible(group.group_id):
            continue
        if states and group.state.value.lower() not in states:
            continue
        if types and "classic" not in types:
            continue
        groups.append(make(listed_cls, group_id=group.group_id, protocol_type=group.protocol_type or "",
                           group_state=group.state.value, group_type="classic"))
    return make(cls, throttle_time=NO_THROTTLE, error_code=error("none"), groups=tuple(groups))
