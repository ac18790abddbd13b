"""A broker logging in to another broker's SASL listener, as Kafka's clients do: SaslHandshake
v1 naming the mechanism, then SaslAuthenticate v2 carrying each token of the exchange
(PLAIN: one; SCRAM: client-first, then client-final, and the server-final checked so a leader
that does not know our password cannot pass for one that does).

`login(exchange, credentials)` runs over any `exchange(request) -> response` (a fresh
BrokerConnection's, before anything else is sent on it). A refusal of any kind — the mechanism
not enabled, wrong credentials, a server proof that does not verify — raises
SaslLoginFailed with the peer's message; the caller drops the connection, and the next
attempt logs in again after the reconnect backoff.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Protocol

from wire.protocol import request_class
from wire.sasl_mechanism import SaslAuthenticationFailed
from wire.sasl_plain import plain_client_token
from wire.scram import SCRAM_MECHANISMS, ScramClient

SASL_HANDSHAKE = (17, 1)
SASL_AUTHENTICATE = (36, 2)


class SaslCredentials(Protocol):
    """security_config.InterBrokerLogin: --inter-broker-sasl-mechanism / -username / -password."""

    mechanism: str
    username: str
    password: str


class SaslLoginFailed(ConnectionError):
    pass


Exchange = Callable[[object], Awaitable[object]]


async def login(exchange: Exchange, credentials: SaslCredentials) -> None:
    mechanism = credentials.mechanism
    handshake = await exchange(request_class(*SASL_HANDSHAKE)(mechanism=mechanism))
    if handshake.error_code.name != "none":
        raise SaslLoginFailed(f"SASL mechanism {mechanism} refused ({handshake.error_code.name}); "
                              f"enabled: {', '.join(handshake.mechanisms)}")

    async def send(token: bytes) -> bytes:
        answer = await exchange(request_class(*SASL_AUTHENTICATE)(auth_bytes=token))
        if answer.error_code.name != "none":
            raise SaslLoginFailed(f"SASL {mechanism} login as {credentials.username} failed: "
                                  f"{answer.error_message or answer.error_code.name}")
        return bytes(answer.auth_bytes)

    if mechanism == "PLAIN":
        await send(plain_client_token(credentials.username, credentials.password))
        return
    if mechanism not in SCRAM_MECHANISMS:
        raise SaslLoginFailed(f"SASL mechanism {mechanism} is not one a broker can log in with")
    client = ScramClient(mechanism, credentials.username, credentials.password, secrets.token_urlsafe(18))
    server_first = await send(client.first())
    try:
        server_final = await send(client.final(server_first))
        client.verify(server_final)
    except SaslAuthenticationFailed as exc:
        raise SaslLoginFailed(f"SASL {mechanism} login as {credentials.username}: {exc}") from None
