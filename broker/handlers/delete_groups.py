"""DeleteGroups: only empty groups go; their offsets and metadata get tombstones. A share group
(KIP-932) goes with its share-partitions' state, deleted at the share coordinator first, as
Kafka's GroupCoordinatorService does; one with members is NON_EMPTY_GROUP (the group service
routes each id to its kind: broker/groups/group_service.py)."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    result_cls = nested(cls, "DeletableGroupResult")
    names = list(request.groups_names)
    allowed = [g for g in names if ctx.authorizer.group_allowed(Operation.DELETE, g)]  # ACLs: DELETE on the group
    codes = await ctx.groups.delete_groups(allowed)
    results = tuple(make(result_cls, group_id=g, error_code=codes.get(g, ErrorCode.group_authorization_failed))
                    for g in names)
    return make(cls, throttle_time=NO_THROTTLE, results=results)
