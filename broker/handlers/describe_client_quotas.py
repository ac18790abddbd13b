"""DescribeClientQuotas (API 48): the stored quotas of the entities a filter matches.

Kafka's checks (ClientQuotasImage.describe, broker/quotas/entities.py): a bad filter fails the
whole request with its error and message and no entries; DESCRIBE_CONFIGS on the cluster is
needed (CLUSTER_AUTHORIZATION_FAILED otherwise). A default entity is described with a null name.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.quotas.entities import QuotaRequestError, parse_filter
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    if not ctx.authorizer.cluster_allowed(Operation.DESCRIBE_CONFIGS):
        return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.cluster_authorization_failed,
                    error_message="Cluster authorization failed.", entries=None)
    try:
        wanted = parse_filter(request.components, request.strict)
    except QuotaRequestError as exc:
        return make(cls, throttle_time=NO_THROTTLE, error_code=exc.code, error_message=exc.message,
                    entries=None)
    entry_cls, entity_cls, value_cls = nested(cls, "EntryData"), nested(cls, "EntityData"), nested(cls, "ValueData")
    entries = tuple(
        make(entry_cls,
             entity=tuple(make(entity_cls, entity_type=t, entity_name=n) for t, n in entity),
             values=tuple(make(value_cls, key=k, value=v) for k, v in sorted(values.items())))
        for entity, values in ctx.client_quotas.quotas().items() if wanted.matches(entity))
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, entries=entries)
