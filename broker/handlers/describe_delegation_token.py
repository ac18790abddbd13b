"""DescribeDelegationToken (API 41, v1-3; v0 gone in Kafka 4, KIP-896): the tokens the requester
may see, with their HMACs.

Kafka's rules (KafkaApis.handleDescribeTokensRequest, DelegationTokenManager.filterToken): a
connection that may not use the token APIs gets DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, a broker
without a secret key DELEGATION_TOKEN_AUTH_DISABLED, both with no tokens; owners null asks for
every token, an empty list for none. A token is listed when the owners asked for (if any) name
its owner or one of its renewers, and the requester owns or renews it, or may DESCRIBE the
DELEGATION_TOKEN resource of its id, or DESCRIBE_TOKENS on its owner's USER resource (KIP-373).
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.handlers.delegation_token_gate import requester, token_requests_allowed
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.security.acl.model import Operation, ResourceType
from broker.security.delegation_token import TokenInformation, split_principal


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    tokens = ctx.security.tokens
    if not token_requests_allowed():
        return make(cls, error_code=ErrorCode.delegation_token_request_not_allowed, tokens=(), throttle_time=NO_THROTTLE)
    if not tokens.enabled:
        return make(cls, error_code=ErrorCode.delegation_token_auth_disabled, tokens=(), throttle_time=NO_THROTTLE)
    asking = requester()
    owners = None if request.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in request.owners]

    def visible(token: TokenInformation) -> bool:
        if owners is not None and not any(token.owner_or_renewer(o) for o in owners):
            return False
        return (token.owner_or_renewer(asking)
                or ctx.authorizer.allowed(Operation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id)
                or ctx.authorizer.allowed(Operation.DESCRIBE_TOKENS, ResourceType.USER, token.owner))

    token_cls, renewer_cls = nested(cls, "DescribedDelegationToken"), nested(cls, "DescribedDelegationTokenRenewer")
    described = []
    for token, hmac in ([] if owners == [] else tokens.describe(visible)):
        owner_type, owner_name = split_principal(token.owner)
        asking_type, asking_name = split_principal(token.requester)
        renewers = tuple(make(renewer_cls, principal_type=t, principal_name=n)
                         for t, n in map(split_principal, token.renewers))
        described.append(make(token_cls, principal_type=owner_type, principal_name=owner_name,
                              token_requester_principal_type=asking_type, token_requester_principal_name=asking_name,
                              issue_timestamp=token.issue_ms, expiry_timestamp=token.expiry_ms,
                              max_timestamp=token.max_ms, token_id=token.token_id, hmac=hmac, renewers=renewers))
    return make(cls, error_code=ErrorCode.none, tokens=tuple(described), throttle_time=NO_THROTTLE)
