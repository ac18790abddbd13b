"""DescribeAcls (API 29) v1-v3: the bindings the filter matches, grouped by resource pattern.
Needs DESCRIBE on the cluster; SECURITY_DISABLED without an authorizer (Kafka's answers)."""

from __future__ import annotations

from itertools import groupby

from kio.static.primitive import i8

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.handlers.acl_filters import InvalidFilter, acl_filter
from broker.api.response_builder import NO_THROTTLE, make, nested


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    acls = ctx.security.acls
    cls = response_for(header)

    def refuse(code: ErrorCode, message: str) -> Answer:
        return make(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=message, resources=())

    if acls is None:
        return refuse(ErrorCode.security_disabled, "No Authorizer is configured on the broker")
    if not ctx.authorizer.cluster_allowed(Operation.DESCRIBE):
        return refuse(ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")
    try:
        matched = acls.describe(acl_filter(request))
    except InvalidFilter as exc:
        return refuse(ErrorCode.invalid_request, str(exc))
    resource_cls, acl_cls = nested(cls, "DescribeAclsResource"), nested(cls, "AclDescription")
    resources = []
    for (rtype, name, pattern), bindings in groupby(matched, key=lambda a: (a.resource_type, a.resource_name,
                                                                        a.pattern_type)):
        descriptions = tuple(make(acl_cls, principal=a.principal, host=a.host, operation=i8(a.operation),
                                  permission_type=i8(a.permission)) for a in bindings)
        resources.append(make(resource_cls, resource_type=i8(rtype), resource_name=name, pattern_type=i8(pattern),
                              acls=descriptions))
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                resources=tuple(resources))
