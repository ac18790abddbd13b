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
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import ssl
import time

from wire.client_codec import decode_response, encode_request, response_correlation_id
from wire.framing import DEFAULT_MAX_REQUEST_SIZE, FrameDecoder, PeerProtocolError

from .sasl_login import SaslCredentials, SaslLoginFailed, login

log = logging.getLogger(__name__)

_READ_CHUNK = 256 * 1024


class ConnectionFailed(ConnectionError):
    """The request got no answer: the connection could not be made, broke, or timed out.
    The peer may or may not have processed it."""


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
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task | None = None
        # correlation id -> (future, api_key, version), oldest first
        self._waiting: dict[int, tuple[asyncio.Future, int, int]] = {}
        self._correlation_ids = itertools.count(1)
        self._closed = False

    @property
    def connected(self) -> bool:
        return self._writer is not None

    async def request(self, body):
        """Send one kio request entity; return the typed response. Raises ConnectionFailed."""
        return await self._exchange(await self._connection(), body)

    async def _exchange(self, writer: asyncio.StreamWriter, body):
        correlation_id = next(self._correlation_ids) & 0x7FFFFFFF
        answer = asyncio.get_running_loop().create_future()
        self._waiting[correlation_id] = (answer, body.__api_key__, body.__version__)
        try:
            writer.write(encode_request(body, correlation_id, self.client_id))
            await asyncio.wait_for(writer.drain(), self._timeout)
            return await asyncio.wait_for(answer, self._timeout)
        except asyncio.TimeoutError:
            self._disconnect(writer, f"no answer within {self._timeout:g} s")
            raise ConnectionFailed(f"{self._peer()}: request {correlation_id} timed out") from None
        except OSError as exc:  # a write to a reset connection
            self._disconnect(writer, str(exc))
            raise ConnectionFailed(f"{self._peer()}: {exc}") from exc
        # A caller cancelled while waiting leaves its entry in place: the response still comes,
        # in its turn, and the reader drops it; removing the entry would break the order check.

    async def close(self) -> None:
        self._closed = True
        writer = self._writer
        if writer is not None:
            self._disconnect(writer, "closed")
            try:
                await writer.wait_closed()
            except OSError:
                pass

    # ----- connecting -------------------------------------------------------------------

    async def _connection(self) -> asyncio.StreamWriter:
        async with self._connect_lock:
            if self._closed:
                raise ConnectionFailed(f"{self._peer()}: connection closed")
            if self._writer is not None:
                return self._writer
            wait = self._next_attempt - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port, ssl=self._tls), self._timeout)
            except (OSError, asyncio.TimeoutError) as exc:
                self._next_attempt = time.monotonic() + self._backoff
                self._backoff = min(self._backoff * 2, self._backoff_max)
                raise ConnectionFailed(f"{self._peer()}: cannot connect: {exc!r}") from exc
            self._writer = writer
            self._reader_task = asyncio.create_task(self._read_responses(reader, writer),
                                                    name=f"responses from {self._peer()}")
            if self._login is not None:
                try:
                    await login(lambda body: self._exchange(writer, body), self._login)
                except SaslLoginFailed as exc:  # refused: back off as from a refused connect
                    self._backoff = min(self._backoff * 2, self._backoff_max)
                    self._disconnect(writer, str(exc))
                    raise ConnectionFailed(f"{self._peer()}: {exc}") from None
            self._backoff = self._backoff_min
            log.info("connected to %s%s", self._peer(),
                     f" as {self._login.username} ({self._login.mechanism})" if self._login else "")
            return writer

    def _disconnect(self, writer: asyncio.StreamWriter, reason: str) -> None:
        """Drop this connection (if it is still the current one) and fail what waits on it."""
        if self._writer is not writer:
            return
        self._writer = None
        self._next_attempt = time.monotonic() + self._backoff
        writer.close()
        if self._reader_task is not None and self._reader_task is not asyncio.current_task():
            self._reader_task.cancel()
        self._reader_task = None
        waiting, self._waiting = self._waiting, {}
        for answer, _key, _version in waiting.values():
            if not answer.done():
                answer.set_exception(ConnectionFailed(f"{self._peer()}: {reason}"))
        if not self._closed:
            log.warning("connection to %s dropped: %s", self._peer(), reason)

    # ----- responses --------------------------------------------------------------------

    async def _read_responses(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frames = FrameDecoder(self._max_response)
        try:
            while True:
                data = await reader.read(_READ_CHUNK)
                if not data:
                    self._disconnect(writer, "closed by the peer")
                    return
                for frame in frames.feed(data):
                    self._deliver(frame)
        except PeerProtocolError as exc:
            self._disconnect(writer, f"protocol error: {exc}")
        except OSError as exc:
            self._disconnect(writer, str(exc))

    def _deliver(self, frame: bytes) -> None:
        correlation_id = response_correlation_id(frame)
        oldest = next(iter(self._waiting), None)
        if correlation_id != oldest:
            raise PeerProtocolError(f"response to correlation id {correlation_id}, expected {oldest}")
        answer, api_key, version = self._waiting[correlation_id]
        response = decode_response(frame, api_key, version)  # on failure the entry stays, to be failed
        del self._waiting[correlation_id]
        if not answer.done():
            answer.set_result(response)

    def _peer(self) -> str:
        return f"{self.host}:{self.port}"
