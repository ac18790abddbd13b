"""Who is asking: the listener a request came in on and the principal its connection proved.

One RequestContext per connection, made by the transport (server.py) and set in the context
variable `current_request` of the task serving that connection (asyncio copies it into exactly
that task), so a handler reads it without a parameter: Metadata names the brokers' addresses
on `listener`, the authorizer (ACLs) will check `principal`. The principal is Kafka's
KafkaPrincipal string: `User:ANONYMOUS` on a PLAINTEXT listener and before SASL completes,
`User:<name>` after; `token_authenticated` says the login presented a delegation token (the
principal is then the token's owner, and the token APIs refuse the connection, as Kafka's
KafkaPrincipal.tokenAuthenticated). `connection_id` names the connection for as long as the broker runs: what
outlives a request and must end with its connection (a share session) is filed under it, and the
transport reports it closed (Broker.connection_closed); ids grow in the order connections are
made, so of two connections the older has the lower id (the transaction coordinator tells a
request a client sent before its newer connection's by it). `muted_until`: a client over its quota
is throttled (broker/quotas/enforcement.py), and the transport serves nothing of it until then.
"""

from __future__ import annotations

import itertools
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from broker.net.listeners import Listener

if TYPE_CHECKING:
    from broker.observability.metrics import RequestInstruments

ANONYMOUS = "User:ANONYMOUS"
_connection_ids = itertools.count(1)


class Authentication(Protocol):
    """A SASL listener's login on one connection (broker/security/sasl_session.py's SaslSession)."""

    @property
    def authenticated(self) -> bool: ...

    @property
    def failed(self) -> bool:
        """The login failed: the connection closes after the answer that says so."""

    def gate(self, frame: bytes) -> list[Any] | None:
        """None: dispatch the frame as usual; else the answer's chunks, before the login is done."""


@dataclass
class RequestContext:
    listener: Listener
    peer: str
    principal: str = ANONYMOUS
    session: Authentication | None = field(default=None, repr=False)  # a SASL listener's
    token_authenticated: bool = False
    connection_id: int = field(default_factory=lambda: next(_connection_ids))
    muted_until: float = 0.0  # loop time before which a throttled client's connection reads nothing
    # The metrics' instruments of the request last dispatched here (metrics.py RequestInstruments;
    # None with metrics off): the transport times the writing of that request's answer with them.
    instruments: RequestInstruments | None = field(default=None, repr=False)


current_request: ContextVar[RequestContext | None] = ContextVar("current_request", default=None)


def current_connection_id() -> int | None:
    """The connection of the request being handled; None outside a connection's task."""
    context = current_request.get()
    return context.connection_id if context is not None else None
