"""What every SASL mechanism's server side is, sans-IO: client tokens in, challenges out.

A mechanism (PlainServer, ScramServer) is fed the client's tokens one at a time by the
connection's authenticator; `step` answers the next server token, `complete` says the exchange
is over and `username` whom it proved (`token_authenticated`: by a delegation token, of which
username is the owner). Anything wrong raises SaslAuthenticationFailed, whose
message is what Kafka puts in SaslAuthenticate's error_message (clients show it to the user).
"""

from __future__ import annotations

from typing import Protocol

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class SaslAuthenticationFailed(Exception):
    """The client failed to prove who it is (SASL_AUTHENTICATION_FAILED)."""


class ServerMechanism(Protocol):
    complete: bool
    username: str | None
    token_authenticated: bool

    def step(self, token: bytes) -> bytes:
        """The answer to one client token; raises SaslAuthenticationFailed."""
