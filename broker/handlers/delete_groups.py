"""DeleteGroups: only empty groups go; their offsets and metadata get tombstones. A share group
(KIP-932) goes with its share-partitions' state, deleted at the share coordinator first, as
Kafka's GroupCoordinatorService does; one with members is NON_EMPTY_GROUP."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.groups import offsets
from broker.groups.consumer import classic_apis
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    broker = ctx.broker  # until this handler is moved onto ctx's typed services
    cls = response_for(header)
    result_cls = nested(cls, "DeletableGroupResult")
    names = list(request.groups_names)
    allowed = [g for g in names if broker.authorizer.group_allowed(Operation.DELETE, g)]  # ACLs: DELETE on the group
    consumer = {g: broker.consumer_groups.groups[g] for g in allowed if g in broker.consumer_groups.groups}
    codes: dict[str, ErrorCode] = {}
    for group_id in allowed:  # share groups first; an id no share group holds falls through
        if group_id in consumer or broker.other_group_kind(group_id) or broker.groups.coordinator_error(group_id):
            continue
        code = await broker.share_admin.delete_group(group_id)
        if code is not None:
            codes[group_id] = code
    for group_id in allowed:  # a streams group: refused while it has members, as Kafka's NON_EMPTY_GROUP
        if group_id not in codes and not broker.groups.coordinator_error(group_id):
            code = await broker.streams_groups.delete(group_id)
            if code is ErrorCode.non_empty_group or (code is ErrorCode.none and group_id not in broker.groups.groups):
                codes[group_id] = code  # else its committed offsets go with the classic delete below
    classic = [g for g in allowed if g not in consumer and g not in codes]
    codes.update(zip(classic, await offsets.delete_groups(broker.groups, classic)))
    for group_id, group in consumer.items():
        codes[group_id] = await classic_apis.delete(broker.consumer_groups, group)
    results = tuple(make(result_cls, group_id=g, error_code=codes.get(g, ErrorCode.group_authorization_failed))
                    for g in names)
    return make(cls, throttle_time=NO_THROTTLE, results=results)
