"""The TLS handshake of an SSL / SASL_SSL connection, before the Kafka connection sees a byte.

asyncio's create_server(ssl=...) would do the handshake itself, but a failed one (a plaintext
client on the TLS port, a missing or untrusted client certificate) then vanishes without a
word: asyncio logs it only in debug mode. So a TLS listener accepts with `TlsAcceptor`, which
upgrades the connection with loop.start_tls and hands the TLS transport to the real protocol
(server.KafkaConnection) only once the handshake is done; a failure closes the connection
with one log line and nothing else happens (no Kafka connection, no request memory taken).

The principal on an SSL listener is Kafka's default mapping (ssl.principal.mapping.rules =
DEFAULT): `User:` + the client certificate's subject as an RFC 2253 distinguished name, most
specific attribute first, e.g. `User:CN=alice,OU=eng,O=example` (what Java's
X500Principal.getName() gives); User:ANONYMOUS when the client sent no certificate.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable

from broker.net.listeners import Listener

log = logging.getLogger(__name__)

DEFAULT_HANDSHAKE_TIMEOUT_S = 60.0  # asyncio's, when connections.max.idle.ms is -1 (never)


class TlsAcceptor(asyncio.Protocol):
    """`idle_ms`: connections.max.idle.ms. A peer that connects and says nothing is closed when
    that runs out, as on a plaintext listener (the peers' liveness watch holds such connections)."""

    def __init__(self, make_connection: Callable[[], asyncio.Protocol], context: ssl.SSLContext, listener: Listener,
                 idle_ms: int) -> None:
        self._make_connection = make_connection  # () -> the protocol that serves the TLS transport
        self._context = context
        self._listener = listener
        self._timeout_s = idle_ms / 1000 if idle_ms > 0 else DEFAULT_HANDSHAKE_TIMEOUT_S
        self._task: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # a TCP stream's
        # Nothing may be read before start_tls takes over the transport: the ClientHello would be lost.
        transport.pause_reading()
        self._task = asyncio.get_running_loop().create_task(self._handshake(transport))

    def connection_lost(self, exc: Exception | None) -> None:
        # Only before start_tls swapped the protocol in (after, the TLS protocol is told instead):
        # the handshake has nothing left to wait for.
        if self._task is not None:
            self._task.cancel()

    async def _handshake(self, transport: asyncio.Transport) -> None:
        peer = "%s:%s" % (transport.get_extra_info("peername") or ("?", "?"))[:2]
        connection = self._make_connection()
        loop = asyncio.get_running_loop()
        try:
            tls_transport = await loop.start_tls(transport, connection, self._context, server_side=True,
                                                 ssl_handshake_timeout=self._timeout_s)
        except ssl.SSLError as exc:
            log.warning("closing connection from %s on listener %s: TLS handshake failed: %s",
                        peer, self._listener.name, exc.reason or exc)
            transport.abort()
            return
        except (ConnectionError, OSError, TimeoutError, asyncio.TimeoutError) as exc:
            # Silent or gone before a ClientHello: a port probe, a liveness watch; not worth a line.
            log.debug("closing connection from %s on listener %s: no TLS handshake (%s)",
                     peer, self._listener.name, type(exc).__name__ if not str(exc) else exc)
            transport.abort()
            return
        assert tls_transport is not None  # typeshed's Optional: asyncio returns the TLS transport or raises
        connection.connection_made(tls_transport)


def certificate_principal(transport: asyncio.BaseTransport) -> str | None:
    """`User:<subject DN>` of the client certificate on this TLS transport, None without one."""
    ssl_object = transport.get_extra_info("ssl_object")
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return None
    from cryptography import x509  # only when a client certificate is there to read

    return "User:" + x509.load_der_x509_certificate(der).subject.rfc4514_string()
