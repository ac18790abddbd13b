"""SaslHandshake and SaslAuthenticate on a connection that needs no authentication: a PLAINTEXT
listener, or one already authenticated. Kafka's KafkaApis answers both ILLEGAL_SASL_STATE (it
offers no re-authentication here: connections.max.reauth.ms is 0). Before authentication both
are answered by the connection's SASL session (broker/security/sasl_session.py) and never reach these."""

from __future__ import annotations

import datetime

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.response_builder import make


async def handle_handshake(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    return make(response_for(header), error_code=ErrorCode.illegal_sasl_state,
                mechanisms=ctx.security.enabled_mechanisms)


async def handle_authenticate(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    return make(response_for(header), error_code=ErrorCode.illegal_sasl_state,
                error_message="SaslAuthenticate request received after successful authentication",
                auth_bytes=b"", session_lifetime=datetime.timedelta(0))
