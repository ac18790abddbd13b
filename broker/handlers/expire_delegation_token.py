"""ExpireDelegationToken (API 40, v1-2; v0 gone in Kafka 4, KIP-896): a negative period removes
the token at once, so no new login can use it; else it expires that long from now (never past
its maximum lifetime).

A connection that may not use the token APIs gets DELEGATION_TOKEN_REQUEST_NOT_ALLOWED with the
expiry -1 (KafkaApis.handleExpireTokenRequest); the rest is the manager's, in Kafka's order
(delegation_token_manager.py).
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.handlers.delegation_token_gate import (ERROR_TIMESTAMP, as_ms, requester, timestamp,
                                                   token_requests_allowed)
from broker.api.response_builder import NO_THROTTLE, make


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    if not token_requests_allowed():
        code, expiry = ErrorCode.delegation_token_request_not_allowed, ERROR_TIMESTAMP
    else:
        code, expiry = await ctx.security.tokens.expire(requester(), request.hmac,
                                                           as_ms(request.expiry_time_period))
    return make(response_for(header), error_code=code, expiry_timestamp=timestamp(expiry),
                throttle_time=NO_THROTTLE)
