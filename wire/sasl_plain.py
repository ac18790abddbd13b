"""SASL PLAIN (RFC 4616), server and client, sans-IO.

One client token, no challenge:

    [authzid] NUL authcid NUL passwd      (UTF-8; authzid empty or equal to authcid)

The server answers an empty token and is complete, or fails with Kafka's message. The
password check is the caller's (PLAIN users live in a file the broker reads), made in
constant time there.
"""

from __future__ import annotations

from typing import Callable

from .sasl_mechanism import SaslAuthenticationFailed

INVALID = "Authentication failed: Invalid username or password"


class PlainServer:
    mechanism = "PLAIN"

    def __init__(self, password_ok: Callable[[str, str], bool]) -> None:
        self._password_ok = password_ok
        self.complete = False
        self.username: str | None = None
        self.token_authenticated = False  # PLAIN takes no delegation tokens

    def step(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslAuthenticationFailed("Authentication failed: PLAIN takes one token")
        try:
            authzid, username, password = token.decode("utf-8").split("\x00")
        except ValueError:  # not UTF-8, or not three fields
            raise SaslAuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens") from None
        if not username:
            raise SaslAuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationFailed("Authentication failed: password not specified")
        if authzid and authzid != username:
            raise SaslAuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username")
        if not self._password_ok(username, password):
            raise SaslAuthenticationFailed(INVALID)
        self.complete, self.username = True, username
        return b""


def plain_client_token(username: str, password: str) -> bytes:
    return f"\x00{username}\x00{password}".encode()
