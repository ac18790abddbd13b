"""Every listener's socket, bound before the logs open (lifecycle.py), then served.

Binding all of them first keeps lifecycle's promise for several listeners: a port in use stops
the broker with one line before anything is written to the data dir, and a port 0 listener has
its real port (advertised in Metadata, registered in etcd) before the broker exists. The TLS
certificates of SSL / SASL_SSL listeners are loaded then too (tls_config.py): a bad file is one
line before anything is written. All listeners share one RequestMemoryPool:
queued.max.request.bytes bounds the broker, not a port.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from dataclasses import replace

from wire.request_memory_pool import RequestMemoryPool

from broker.net.listeners import Listener
from broker.settings.security_config import inter_broker_of, listeners_of
from broker.net.connections import Connections
from broker.net.server import serve
from broker.settings.config import BrokerConfig
from broker.security.tls_config import ServerTlsContexts, TlsSetupError


class ListenerBindError(OSError):
    pass


class _Servers:
    def __init__(self, servers: list[asyncio.AbstractServer]) -> None:
        self._servers = servers

    def close(self) -> None:
        for server in self._servers:
            server.close()


class BoundListeners:
    def __init__(self, config: BrokerConfig, bound: list[tuple[Listener, socket.socket]],
                 tls: ServerTlsContexts) -> None:
        self.bound = bound
        self._tls = tls
        listeners = tuple(listener for listener, _ in bound)
        if config.security.listeners:
            config = replace(config, security=replace(config.security, listeners=listeners))
            # The broker's own address (cluster registration, logs) is its inter-broker listener's.
            inter = inter_broker_of(config)
            config = replace(config, host=inter.host, port=inter.port, advertised_host=inter.advertised_host)
        else:
            config = replace(config, port=listeners[0].port)
        self.config = config

    @classmethod
    def bind(cls, config: BrokerConfig, bind_one: Callable[[str, int], socket.socket]) -> BoundListeners:
        """`bind_one(host, port)` -> a bound, not yet listening socket (lifecycle.bind_listener)."""
        try:
            tls = ServerTlsContexts.load(config.security.tls, listeners_of(config))
        except TlsSetupError as exc:
            raise ListenerBindError(str(exc)) from None
        bound: list[tuple[Listener, socket.socket]] = []
        try:
            for listener in listeners_of(config):
                try:
                    sock = bind_one(listener.host, listener.port)
                except OSError as exc:
                    raise ListenerBindError(f"cannot listen on {listener.name}://{listener.host}:{listener.port}: "
                                            f"{exc.strerror or exc}") from None
                bound.append((listener.bound_to(sock.getsockname()[1]), sock))
        except BaseException:
            for _, sock in bound:
                sock.close()
            raise
        return cls(config, bound, tls)

    def close(self) -> None:
        for _, sock in self.bound:
            sock.close()

    async def serve(self, served: Connections) -> _Servers:
        pool = RequestMemoryPool(served.config.queued_max_request_bytes)
        return _Servers([await serve(served, sock, listener, pool, self._tls.context_for(listener))
                         for listener, sock in self.bound])
