"""DeleteGroups: only empty groups go; their offsets and metadata get tombstones."""

from __future__ import annotations

from wire.protocol import response_for

from ..groups import offsets
from .response_builder import NO_THROTTLE, error, make, nested


async def handle(broker, header, request):
    cls = response_for(header)
    result_cls = nested(cls, "DeletableGroupResult")
    codes = await offsets.delete_groups(broker.groups, list(request.groups_names))
    results = tuple(make(result_cls, group_id=g, error_code=error(c)) for g, c in zip(request.groups_names, codes))
    return make(cls, throttle_time=NO_THROTTLE, results=results)
