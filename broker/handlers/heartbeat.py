"""Heartbeat: keeps a member's session alive; tells it when a rebalance has begun."""

from __future__ import annotations

from wire.protocol import response_for

from .response_builder import NO_THROTTLE, error, make


async def handle(broker, header, request):
    code = broker.groups.heartbeat(request.group_id, request.generation_id, request.member_id,
                                   getattr(request, "group_instance_id", None))
    return make(response_for(header), throttle_time=NO_THROTTLE, error_code=error(code))
