"""One outbound Kafka client connection from this broker to another (a follower to its leader).

Requests go out framed by wire.client_codec with increasing correlation ids; one reader task
cuts the response stream into frames and hands each to the request waiting for it. Kafka
answers the requests of a connection in order, so a response must carry the correlation id of
the oldest request still waiting: anything else means the stream is out of step and the
connection is dropped (as Kafka's NetworkClient does).

Failure, of any kind, surfaces as ConnectionFailed to every waiting request: the peer closed
or reset the connection, sent bytes that do not parse, or took longer than the request
timeout (replica.socket.timeout.ms, 30 s) to answer. The connection is then discarded and the
next request reconnects (logging in again on a SASL listener: replica/sasl_login.py; a
refused login counts as a failed connect), though not before the reconnect backoff has passed: it starts at
reconnect.backoff.ms (50 ms) and doubles with each failed attempt up to
reconnect.backoff.max.ms (1 s), Kafka's client defaults, and resets once a connect succeeds.

Responses are read into their frames in place (wire/frame_receiver.py, through a
BufferedProtocol): a follower's fetch answer of a megabyte is copied once, by the kernel.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import ssl
import time
from typing import Any, Callable

from wire.client_codec import decode_response, encode_request, response_correlation_id
from wire.frame_receiver import FrameReceiver
from wire.framing import DEFAULT_MAX_REQUEST_SIZE, PeerProtocolError

from .sasl_login import SaslCredentials, SaslLoginFailed, login

log = logging.getLogger(__name__)


class ConnectionFailed(ConnectionError):
    """The request got no answer: the connection could not be made, broke, or timed out.
    The peer may or may not have processed it."""


class _ResponseStream(asyncio.BufferedProtocol):
    """One TCP (or TLS) connection's transport side: received bytes go straight into frames,
    each handed to `deliver(stream, frame)`; the end of the connection, or bytes that are
    no frame, to `lost(stream, reason)`."""

    def __init__(self, max_response: int, deliver, lost) -> None:
        self._frames = FrameReceiver(max_response)
        self._deliver = deliver
        self._lost = lost
        self.transport: asyncio.Transport | None = None
        self._writable: asyncio.Future | None = None  # while the peer does not read what we send
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport) -> None:
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._frames.buffer()

    def buffer_updated(self, nbytes: int) -> None:
        try:
            for frame in self._frames.received(nbytes):
                self._deliver(self, frame)
        except PeerProtocolError as exc:
            self._lost(self, f"protocol error: {exc}")

    def eof_received(self) -> bool:
        self._lost(self, "closed by the peer")
        return False

    def connection_lost(self, exc) -> None:
        self._lost(self, str(exc) if exc else "closed by the peer")
        self.resume_writing()
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    async def drain(self) -> None:
        if self._writable is not None:
            await self._writable


class BrokerConnection:
    def __init__(self, host: str, port: int, client_id: str, *, request_timeout_ms: int = 30_000,
                 reconnect_backoff_ms: int = 50, reconnect_backoff_max_ms: int = 1_000,
                 max_response_bytes: int = DEFAULT_MAX_REQUEST_SIZE, login: SaslCredentials | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.host = host
        self._tls = tls  # an SSL / SASL_SSL listener's: TLS first (the peer's host name checked), then SASL
        self._login = login  # a SASL listener's: each new connection logs in before its first request
        self.port = port
        self.client_id = client_id
        self._timeout = request_timeout_ms / 1000
        self._backoff_min = reconnect_backoff_ms / 1000
        self._backoff_max = reconnect_backoff_max_ms / 1000
        self._backoff = self._backoff_min
        self._max_response = max_response_bytes
        self._next_attempt = 0.0  # monotonic time before which no reconnect is tried
        self._connect_lock = asyncio.Lock()
        self._stream: _ResponseStream | None = None
        # correlation id -> (future, how its response frame is read), oldest first
        self._waiting: dict[int, tuple[asyncio.Future, Callable]] = {}
        self._correlation_ids = itertools.count(1)
        self._closed = False

    @property
    def connected(self) -> bool:
        return self._stream is not None

    async def request(self, body: Any, read: Callable[[bytes], Any] | None = None) -> Any:
        """Send one kio request entity; return the typed response, or what `read(frame)` makes
        of the response frame (correlation id first), for a reader of its own such as
        wire/fetch_response_view.py. Raises ConnectionFailed, also when the answer does not read."""
        return await self._exchange(await self._connection(), body, read)

    async def _exchange(self, stream: _ResponseStream, body, read=None):
        correlation_id = next(self._correlation_ids) & 0x7FFFFFFF
        answer = asyncio.get_running_loop().create_future()
        if read is None:
            read = functools.partial(decode_response, api_key=body.__api_key__, version=body.__version__)
        self._waiting[correlation_id] = (answer, read)
        try:
            stream.transport.write(encode_request(body, correlation_id, self.client_id))
            await asyncio.wait_for(stream.drain(), self._timeout)
            return await asyncio.wait_for(answer, self._timeout)
        except asyncio.TimeoutError:
            self._disconnect(stream, f"no answer within {self._timeout:g} s")
            raise ConnectionFailed(f"{self._peer()}: request {correlation_id} timed out") from None
        except OSError as exc:  # a write to a reset connection
            self._disconnect(stream, str(exc))
            raise ConnectionFailed(f"{self._peer()}: {exc}") from exc
        # A caller cancelled while waiting leaves its entry in place: the response still comes,
        # in its turn, and the reader drops it; removing the entry would break the order check.

    async def close(self) -> None:
        self._closed = True
        stream = self._stream
        if stream is not None:
            self._disconnect(stream, "closed")
            await stream.closed

    # ----- connecting -------------------------------------------------------------------

    async def _connection(self) -> _ResponseStream:
        async with self._connect_lock:
            if self._closed:
                raise ConnectionFailed(f"{self._peer()}: connection closed")
            if self._stream is not None:
                return self._stream
            wait = self._next_attempt - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            loop = asyncio.get_running_loop()
            try:
                _, stream = await asyncio.wait_for(loop.create_connection(
                    lambda: _ResponseStream(self._max_response, self._deliver, self._disconnect),
                    self.host, self.port, ssl=self._tls), self._timeout)
            except (OSError, asyncio.TimeoutError) as exc:
                self._next_attempt = time.monotonic() + self._backoff
                self._backoff = min(self._backoff * 2, self._backoff_max)
                raise ConnectionFailed(f"{self._peer()}: cannot connect: {exc!r}") from exc
            self._stream = stream
            if self._login is not None:
                try:
                    await login(lambda body: self._exchange(stream, body), self._login)
                except SaslLoginFailed as exc:  # refused: back off as from a refused connect
                    self._backoff = min(self._backoff * 2, self._backoff_max)
                    self._disconnect(stream, str(exc))
                    raise ConnectionFailed(f"{self._peer()}: {exc}") from None
            self._backoff = self._backoff_min
            log.info("connected to %s%s", self._peer(),
                     f" as {self._login.username} ({self._login.mechanism})" if self._login else "")
            return stream

    def _disconnect(self, stream: _ResponseStream, reason: str) -> None:
        """Drop this connection (if it is still the current one) and fail what waits on it."""
        if self._stream is not stream:
            return
        self._stream = None
        self._next_attempt = time.monotonic() + self._backoff
        stream.transport.close()
        waiting, self._waiting = self._waiting, {}
        for answer, _read in waiting.values():
            if not answer.done():
                answer.set_exception(ConnectionFailed(f"{self._peer()}: {reason}"))
        if not self._closed:
            log.warning("connection to %s dropped: %s", self._peer(), reason)

    # ----- responses --------------------------------------------------------------------

    def _deliver(self, stream: _ResponseStream, frame) -> None:
        """A whole response frame came in on `stream` (called by it, from the event loop)."""
        if self._stream is not stream:
            return  # the rest of a connection already dropped
        correlation_id = response_correlation_id(frame)
        oldest = next(iter(self._waiting), None)
        if correlation_id != oldest:
            raise PeerProtocolError(f"response to correlation id {correlation_id}, expected {oldest}")
        answer, read = self._waiting[correlation_id]
        response = read(frame)  # on failure the entry stays, to be failed
        del self._waiting[correlation_id]
        if not answer.done():
            answer.set_result(response)

    def _peer(self) -> str:
        return f"{self.host}:{self.port}"
