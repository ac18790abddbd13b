"""CreateDelegationToken (API 38, v1-3; v0 gone in Kafka 4, KIP-896): a new token for the
requester, or from v3 for another owner (KIP-373).

Kafka's order (KafkaApis.handleCreateTokenRequest, then the controller's
DelegationTokenControlManager.createDelegationToken): an owner name without a type is an
UNKNOWN_SERVER_ERROR naming ANONYMOUS twice (Kafka cannot build the principal); a connection
that may not ask for tokens DELEGATION_TOKEN_REQUEST_NOT_ALLOWED; a token for another owner
without CreateTokens on that User resource DELEGATION_TOKEN_AUTHORIZATION_FAILED; a renewer that
is not a User INVALID_PRINCIPAL_TYPE — these with the times -1 — then a broker without
delegation.token.secret.key DELEGATION_TOKEN_AUTH_DISABLED, with the times 0. Every answer names
the owner and the requester.
"""

from __future__ import annotations

from typing import Any

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.handlers.delegation_token_gate import (ERROR_TIMESTAMP, as_ms, requester, timestamp,
                                                   token_requests_allowed)
from broker.api.response_builder import NO_THROTTLE, make
from broker.net.request_context import ANONYMOUS
from broker.security.acl.model import Operation, ResourceType
from broker.security.delegation_token import split_principal

USER_TYPE = "User"


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    asking = requester()
    owner_name = getattr(request, "owner_principal_name", None)
    owner_type = getattr(request, "owner_principal_type", None)
    if owner_name and owner_type is None:
        return _refusal(cls, ErrorCode.unknown_server_error, ANONYMOUS, ANONYMOUS, ERROR_TIMESTAMP)
    owner = f"{owner_type}:{owner_name}" if owner_name else asking
    if not token_requests_allowed():
        return _refusal(cls, ErrorCode.delegation_token_request_not_allowed, owner, asking, ERROR_TIMESTAMP)
    if owner != asking and not ctx.authorizer.allowed(Operation.CREATE_TOKENS, ResourceType.USER, owner):
        return _refusal(cls, ErrorCode.delegation_token_authorization_failed, owner, asking, ERROR_TIMESTAMP)
    if any(r.principal_type != USER_TYPE for r in request.renewers):
        return _refusal(cls, ErrorCode.invalid_principal_type, owner, asking, ERROR_TIMESTAMP)
    renewers = tuple(f"{r.principal_type}:{r.principal_name}" for r in request.renewers)
    tokens = ctx.security.tokens
    problem, token = await tokens.create(owner, asking, renewers, as_ms(request.max_lifetime))
    if token is None:
        return _refusal(cls, problem, owner, asking, 0)
    return _answer(cls, ErrorCode.none, owner, asking, token.issue_ms, token.expiry_ms, token.max_ms, token.token_id,
                   tokens.hmac(token.token_id))


def _refusal(cls: Any, code: ErrorCode, owner: str, asking: str, times: int) -> Answer:
    return _answer(cls, code, owner, asking, times, times, times, "", b"")


def _answer(cls: Any, code: ErrorCode, owner: str, asking: str, issue_ms: int, expiry_ms: int, max_ms: int,
            token_id: str, hmac: bytes) -> Answer:
    owner_type, owner_name = split_principal(owner)
    asking_type, asking_name = split_principal(asking)
    return make(cls, error_code=code, principal_type=owner_type, principal_name=owner_name,
                token_requester_principal_type=asking_type, token_requester_principal_name=asking_name,
                issue_timestamp=timestamp(issue_ms), expiry_timestamp=timestamp(expiry_ms),
                max_timestamp=timestamp(max_ms), token_id=token_id, hmac=hmac, throttle_time=NO_THROTTLE)
