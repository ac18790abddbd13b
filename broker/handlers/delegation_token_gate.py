"""What the four delegation token APIs (38-41) share: Kafka's KafkaApis.allowTokenRequests, and
the conversions of their times.

A token may be asked for, renewed, expired or described only over a connection that proved who
it is by other means than a token: never on PLAINTEXT, never on SSL without a client
certificate (the principal is then ANONYMOUS), never by a connection that logged in with a
token (a token must not beget tokens). Anything else answers DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
before any other check.
"""

from __future__ import annotations

import datetime

from broker.net.request_context import ANONYMOUS, current_request

ERROR_TIMESTAMP = -1  # Kafka's DelegationTokenManager.ErrorTimestamp: the times of a broker's refusal
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MS = datetime.timedelta(milliseconds=1)


def token_requests_allowed() -> bool:
    context = current_request.get()
    if context is None:  # the broker's own call: none of these arrives without a connection
        return True
    protocol = context.listener.security_protocol
    return not (context.token_authenticated or protocol == "PLAINTEXT"
                or (protocol == "SSL" and context.principal == ANONYMOUS))


def requester() -> str:
    context = current_request.get()
    return ANONYMOUS if context is None else context.principal


def as_ms(period: datetime.timedelta) -> int:
    return period // _MS


def timestamp(ms: int) -> datetime.datetime:
    return _EPOCH + ms * _MS
