"""DeleteAcls (API 31) v1-v3: per filter, the bindings it removed (each with its own error code,
none here). The removal is durable before the answer. Needs ALTER on the cluster;
SECURITY_DISABLED without an authorizer (Kafka's answers)."""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import AclFilter, Operation
from broker.handlers.acl_filters import InvalidFilter, acl_filter, wire_codes
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    acls = ctx.security.acls
    cls = response_for(header)
    result_cls, matching_cls = nested(cls, "DeleteAclsFilterResult"), nested(cls, "DeleteAclsMatchingAcl")
    refusal = None
    if acls is None:
        refusal = (ErrorCode.security_disabled, "No Authorizer is configured on the broker")
    elif not ctx.authorizer.cluster_allowed(Operation.ALTER):
        refusal = (ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")
    filters: list[AclFilter] = []
    failures: dict[int, tuple[ErrorCode, str]] = {}
    for i, f in enumerate(request.filters):
        if refusal is not None:
            failures[i] = refusal
            continue
        try:
            filters.append(acl_filter(f))
        except InvalidFilter as exc:
            failures[i] = (ErrorCode.invalid_request, str(exc))
    removed = iter(await acls.delete(filters)) if acls is not None and filters else iter(())
    results = []
    for i in range(len(request.filters)):
        if i in failures:
            code, message = failures[i]
            results.append(make(result_cls, error_code=code, error_message=message, matching_acls=()))
            continue
        matching = tuple(make(matching_cls, error_code=ErrorCode.none, error_message=None, **wire_codes(a))
                         for a in next(removed))
        results.append(make(result_cls, error_code=ErrorCode.none, error_message=None, matching_acls=matching))
    return make(cls, throttle_time=NO_THROTTLE, filter_results=tuple(results))
