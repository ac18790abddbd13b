"""CreateAcls (API 30) v1-v3: each creation stands alone (INVALID_REQUEST with Kafka's reason for
a bad one); the good ones are stored together, durably, before the answer. Needs ALTER on the
cluster (CLUSTER_AUTHORIZATION_FAILED for every creation); SECURITY_DISABLED when the broker
runs without an authorizer, as Kafka answers."""

from __future__ import annotations

from typing import Any

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import AclBinding, InvalidAcl, Operation, PatternType, Permission, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested


def _binding(c: Any) -> AclBinding:
    try:
        binding = AclBinding(ResourceType(c.resource_type), c.resource_name, PatternType(c.resource_pattern_type),
                             c.principal, c.host, Operation(c.operation), Permission(c.permission_type))
    except ValueError as exc:
        raise InvalidAcl(f"Unknown code in ACL creation: {exc}") from None
    binding.validate()
    return binding


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    acls = ctx.security.acls
    cls = response_for(header)
    result_cls = nested(cls, "AclCreationResult")

    def refuse(code: ErrorCode, message: str) -> Answer:
        results = [make(result_cls, error_code=code, error_message=message) for _ in request.creations]
        return make(cls, throttle_time=NO_THROTTLE, results=tuple(results))

    if acls is None:
        return refuse(ErrorCode.security_disabled, "No Authorizer is configured on the broker")
    if not ctx.authorizer.cluster_allowed(Operation.ALTER):
        return refuse(ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")
    outcomes: list[tuple[ErrorCode, str | None]] = []
    good: list[AclBinding] = []
    for creation in request.creations:
        try:
            good.append(_binding(creation))
            outcomes.append((ErrorCode.none, None))
        except InvalidAcl as exc:
            outcomes.append((ErrorCode.invalid_request, str(exc)))
    await acls.create(good)
    results = [make(result_cls, error_code=code, error_message=message) for code, message in outcomes]
    return make(cls, throttle_time=NO_THROTTLE, results=tuple(results))
