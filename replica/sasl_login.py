"""Logging in to a broker's SASL listener, as Kafka's clients do: SaslHandshake v1 naming the
mechanism, then SaslAuthenticate v2 carrying each token of the exchange (PLAIN: one; SCRAM:
client-first, then client-final, and the server-final checked so a broker that does not know
our password cannot pass for one that does).

The exchange is written once, sans-IO, as `login_steps(credentials)`: a generator that yields
each request and is sent each answer. Two drivers run it: `login(exchange, credentials)` over
an asyncio `exchange(request) -> response` (a follower's fresh BrokerConnection, before
anything else is sent on it) and the `twinlog` CLI's blocking connection
(broker/cli/kafka_client.py). A refusal of any kind — the mechanism not enabled, wrong
credentials, a server proof that does not verify — raises SaslLoginFailed with the peer's
message; the caller drops the connection (a follower logs in again after its reconnect backoff).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Generator
from typing import Protocol

from wire.error_codes import ErrorCode
from wire.protocol import request_class
from wire.sasl_mechanism import SaslAuthenticationFailed
from wire.sasl_plain import plain_client_token
from wire.scram import SCRAM_MECHANISMS, ScramClient

SASL_HANDSHAKE = (17, 1)
SASL_AUTHENTICATE = (36, 2)
MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)  # what a login can use


class SaslCredentials(Protocol):
    """security_config.InterBrokerLogin (--inter-broker-sasl-*), or the CLI's settings; read
    only (properties), so a frozen dataclass is one."""

    @property
    def mechanism(self) -> str: ...

    @property
    def username(self) -> str: ...

    @property
    def password(self) -> str: ...


class SaslLoginFailed(ConnectionError):
    pass


Exchange = Callable[[object], Awaitable[object]]
Steps = Generator[object, object, None]  # yields requests, is sent their answers


def login_steps(credentials: SaslCredentials) -> Steps:
    mechanism = credentials.mechanism
    if mechanism not in MECHANISMS:
        raise SaslLoginFailed(f"SASL mechanism {mechanism} is not one a client can log in with here")
    handshake = yield request_class(*SASL_HANDSHAKE)(mechanism=mechanism)
    if handshake.error_code is not ErrorCode.none:
        raise SaslLoginFailed(f"SASL mechanism {mechanism} refused ({handshake.error_code.name}); "
                              f"enabled: {', '.join(handshake.mechanisms)}")

    def authenticate(token: bytes):
        return request_class(*SASL_AUTHENTICATE)(auth_bytes=token)

    def token_of(answer) -> bytes:
        if answer.error_code is not ErrorCode.none:
            raise SaslLoginFailed(f"SASL {mechanism} login as {credentials.username} failed: "
                                  f"{answer.error_message or answer.error_code.name}")
        return bytes(answer.auth_bytes)

    if mechanism == "PLAIN":
        token_of((yield authenticate(plain_client_token(credentials.username, credentials.password))))
        return
    client = ScramClient(mechanism, credentials.username, credentials.password, secrets.token_urlsafe(18))
    server_first = token_of((yield authenticate(client.first())))
    try:
        server_final = token_of((yield authenticate(client.final(server_first))))
        client.verify(server_final)
    except SaslAuthenticationFailed as exc:
        raise SaslLoginFailed(f"SASL {mechanism} login as {credentials.username}: {exc}") from None


async def login(exchange: Exchange, credentials: SaslCredentials) -> None:
    steps = login_steps(credentials)
    answer = None
    while True:
        try:
            request = steps.send(answer)
        except StopIteration:
            return
        answer = await exchange(request)


def login_blocking(call: Callable[[object], object], credentials: SaslCredentials) -> None:
    """The same login over a blocking `call(request) -> response` (the CLI's connection)."""
    steps = login_steps(credentials)
    answer = None
    while True:
        try:
            request = steps.send(answer)
        except StopIteration:
            return
        answer = call(request)
