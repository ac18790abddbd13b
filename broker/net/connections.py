"""What a client connection needs of the broker (server.py's KafkaConnection): what dispatch
needs (Served), the connection settings, who a new connection is, and the word that one closed.
The Broker (broker/broker.py) is what offers it; the transport sees nothing else of it."""

from __future__ import annotations

from typing import Protocol

from broker.api.dispatch import Served
from broker.net.listeners import Listener
from broker.net.request_context import RequestContext
from broker.settings.config import BrokerConfig


class ConnectionLogins(Protocol):
    def context_for(self, listener: Listener, peer: str) -> RequestContext:
        """A new connection's context: its principal before any login, its SASL session."""


class Connections(Served, Protocol):
    """What a client connection needs of the broker (Broker, broker/broker.py): what dispatch
    needs (Served), the connection settings, who a new connection is, the word that one closed."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def security(self) -> ConnectionLogins: ...

    def connection_closed(self, connection_id: int) -> None:
        """What the connection opened (a share session) ends with it."""
