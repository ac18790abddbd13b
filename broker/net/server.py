"""The asyncio transport: reads frames, writes response bytes and file regions (answer_writer.py); nothing else.

Requests on one connection are answered in order (clients pipeline and match
responses by order as well as correlation id); connections are independent.
A peer that breaks the protocol loses its own connection, with a log line.

Produce requests pipeline, as in Redpanda: a durable produce appends at once
and its answer (made by a task waiting for the fsync) joins the backlog
(answer_backlog.py), which writes the answers in request order while the next
requests are read and appended, so one fsync covers all of them (group commit
within one connection). Any other request first waits for the backlog to empty:
a client that was told its records are stored then sees them (read-your-writes
on one connection).

Fairness: a connection serves the frames it has queued back to back, but yields the event loop
every SERVE_SLICE_S, so one client pipelining heavy requests (a Metadata of thousands of
partitions, a Produce of a thousand) delays the others by one slice, not by its whole queue.

Memory: every connection's frames reserve their size from one RequestMemoryPool
(queued.max.request.bytes) and give it back once handled; a connection whose next
frame the pool cannot admit stops reading until it can, so the kernel's socket
buffers, not the broker, hold what its peer keeps sending. A connection that
neither reads nor writes for connections.max.idle.ms is closed (Kafka's Selector),
which also frees what a peer that stopped mid-frame had reserved.

Quotas: a client over its quota is muted (broker/quotas/enforcement.py): its answer goes out
with throttle_time_ms, then nothing more of it is read or served until the throttle time ends.

Closing: the requests a peer sent before it closed the connection (FIN, or a reset after them)
are still handled, their answers dropped, as Kafka's Selector serves the completed receives of
a closing channel: an acks=0 producer that sends and exits (kcat -X acks=0) loses nothing the
broker received. What the broker closes itself (idle, a protocol error, a failed login) drops
what is queued.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from collections import deque

from wire.framing import FrameDecoder, PeerProtocolError
from wire.request_memory_pool import RequestMemoryPool

from broker.net import freed_memory
from broker.net.answer_backlog import AnswerBacklog
from broker.net.answer_writer import AnswerWriter
from broker.net.client_address import client_host
from broker.api.dispatch import ConnectionClosed, dispatch
from broker.net.connections import Connections
from broker.net.listeners import Listener
from broker.net.request_context import RequestContext, current_request
from broker.settings.security_config import listeners_of
from broker.security.tls_config import TLS_PROTOCOLS
from broker.net.tls_listener import TlsAcceptor, certificate_principal

log = logging.getLogger(__name__)

MAX_QUEUED_REQUESTS = 64
SERVE_SLICE_S = 0.005  # the longest a connection serves its queued frames before yielding the loop
PRODUCE = b"\x00\x00"  # a frame starts with its api key
IDLE_LOG_INTERVAL = 1.0  # seconds: 5,000 idle closes at once make one line a second, not 5,000


class _IdleCloseLog:
    """One info line per idle close, at most one a second overall; the rest are counted in it."""

    def __init__(self) -> None:
        self._next = 0.0
        self._unsaid = 0

    def closed(self, peer: str, idle_ms: int) -> None:
        now = time.monotonic()
        if now < self._next:
            self._unsaid += 1
            return
        more = f" (and {self._unsaid} more since the last line)" if self._unsaid else ""
        log.info("closing connection from %s: idle for %d ms (connections.max.idle.ms)%s", peer, idle_ms, more)
        self._next, self._unsaid = now + IDLE_LOG_INTERVAL, 0


_idle_closes = _IdleCloseLog()


class KafkaConnection(asyncio.Protocol):
    # set by connection_made, before anything else is called
    _transport: asyncio.Transport
    _context: RequestContext

    def __init__(self, served: Connections, pool: RequestMemoryPool, listener: Listener) -> None:
        self._served = served
        self._listener = listener
        self._pool = pool
        self._decoder = FrameDecoder(served.config.max_request_size, pool)
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()  # None: the connection closed
        # time.perf_counter() when each queued frame was read, in queue order (request queue time)
        self._received_at: deque[float] = deque()
        self._queued_bytes = 0  # reserved by frames queued or being handled, given back when handled
        self._answers = AnswerWriter(listener.security_protocol in TLS_PROTOCOLS, self._wrote)
        self._task: asyncio.Task[None] | None = None
        self._paused_reading = False  # too many requests queued
        self._waiting_memory = False  # the next frame waits for the pool
        self._muted = False  # a throttled client (broker/quotas/enforcement.py): nothing read until unmuted
        self._reading_paused = False  # what the transport was last told
        self._loop = asyncio.get_running_loop()
        self._idle_s = served.config.connections_max_idle_ms / 1000
        self._last_active = self._loop.time()
        self._idle_timer: asyncio.TimerHandle | None = None
        self._backlog = AnswerBacklog(self._answers, self._fail)  # answers behind a deferred one
        self._peer_finished = False  # the peer ended its side cleanly: its queued frames are served
        self._closed = False  # the broker was told (connection_closed)
        self.peer = "?"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # a stream's (TCP, or TLS over it)
        self._transport = transport
        self._answers.connected(transport)
        self.peer = "%s:%s" % (transport.get_extra_info("peername") or ("?", "?"))[:2]
        self._context = self._served.security.context_for(self._listener, self.peer)
        if self._listener.security_protocol == "SSL":
            self._context.principal = certificate_principal(transport) or self._context.principal
            log.debug("TLS connection from %s on listener %s as %s", self.peer, self._listener.name,
                      self._context.principal)
        self._task = asyncio.create_task(self._serve())
        if self._served.metrics is not None:
            self._served.metrics.connection_opened()
        host = (transport.get_extra_info("peername") or ("",))[0]
        too_fast_ms = self._served.quotas.connection_throttle_ms(host)
        if too_fast_ms:  # over its ip's connection_creation_rate: held unread, then closed (Kafka's)
            self._muted = True
            self._apply_reading()
            self._loop.call_later(too_fast_ms / 1000, transport.close)
            return
        if self._idle_s >= 0:
            self._idle_timer = self._loop.call_at(self._last_active + self._idle_s, self._check_idle)

    def data_received(self, data: bytes) -> None:
        self._last_active = self._loop.time()
        try:
            frames = self._decoder.feed(data)
        except PeerProtocolError as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            self._transport.abort()
            return
        self._take(frames)

    def _memory_granted(self) -> None:
        """The pool reserved the waiting frame's size (called from a release)."""
        self._waiting_memory = False
        if self._transport.is_closing():
            self._pool.release(self._decoder.waiting_for)  # nobody will read that frame now
            return
        self._last_active = self._loop.time()  # waiting in line is not idling
        try:
            frames = self._decoder.granted()
        except PeerProtocolError as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            self._transport.abort()
            return
        self._take(frames)

    def _take(self, frames: list[bytes]) -> None:
        received = time.perf_counter()
        for frame in frames:
            self._queued_bytes += len(frame)
            self._queue.put_nowait(frame)
            self._received_at.append(received)
        if self._queue.qsize() >= MAX_QUEUED_REQUESTS:
            self._paused_reading = True
        if self._decoder.waiting_for and not self._waiting_memory:
            self._waiting_memory = True
            self._pool.wait(self._decoder.waiting_for, self._memory_granted)
        self._apply_reading()

    def _apply_reading(self) -> None:
        pause = self._paused_reading or self._waiting_memory or self._muted
        if pause == self._reading_paused or self._transport.is_closing():
            return
        self._reading_paused = pause
        if pause:
            self._transport.pause_reading()
        else:
            self._transport.resume_reading()

    def _check_idle(self) -> None:
        now = self._loop.time()
        busy = self._queued_bytes or self._backlog or self._waiting_memory or self._muted
        if busy:
            self._last_active = now  # a request being handled (a long poll, an fsync) is not idleness
        deadline = self._last_active + self._idle_s
        if now < deadline:
            self._idle_timer = self._loop.call_at(deadline, self._check_idle)
            return
        self._idle_timer = None
        _idle_closes.closed(self.peer, int((now - self._last_active) * 1000))
        self._transport.abort()

    def eof_received(self) -> None:
        self._peer_finished = True  # returning None: the transport closes, connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        if self._served.metrics is not None:
            self._served.metrics.connection_closed()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        if self._waiting_memory:
            self._pool.cancel(self._memory_granted)
            self._waiting_memory = False
        unfinished = self._decoder.buffered
        self._decoder.abandon()
        freed_memory.dropped(unfinished)
        self._queue.put_nowait(None)  # ends _serve even if a cancel below is lost (3.11 wait_for)
        self._answers.resume()  # an answer waiting for the peer to read gives up
        if self._peer_finished or exc is not None:
            # the peer ended it (FIN, or a reset): what it sent before is still handled
            self._peer_finished = True
            return  # _serve handles what was queued before CLOSED, then ends the rest (_ended)
        self._ended()
        self._backlog.close()
        if self._task is not None:
            self._task.cancel()

    def _ended(self) -> None:
        """Once no request of this connection will be handled: what it opened ends with it."""
        if not self._closed:
            self._closed = True
            self._served.connection_closed(self._context.connection_id)

    def pause_writing(self) -> None:
        self._answers.pause()

    def resume_writing(self) -> None:
        self._answers.resume()

    def _wrote(self) -> None:
        self._last_active = self._loop.time()

    async def _serve(self) -> None:
        transport = self._transport
        host = (transport.get_extra_info("peername") or ("",))[0]
        client_host.set(f"/{host}")
        current_request.set(self._context)
        try:
            turn_started = self._loop.time()
            while self._peer_finished or not transport.is_closing():
                if self._queue.empty():
                    frame = await self._queue.get()
                    turn_started = self._loop.time()
                else:
                    # Queued frames are taken without suspending: after SERVE_SLICE_S of them,
                    # the other connections and the timers get the loop (without this one
                    # pipelining client held it up to 179 ms at a time, the loop-lag watchdog found).
                    if self._loop.time() - turn_started >= SERVE_SLICE_S:
                        await asyncio.sleep(0)
                        turn_started = self._loop.time()
                    frame = self._queue.get_nowait()
                if frame is None:  # connection_lost's
                    break
                received = self._received_at.popleft()
                if self._paused_reading and self._queue.qsize() < MAX_QUEUED_REQUESTS // 2:
                    self._paused_reading = False
                    self._apply_reading()
                try:
                    await self._wait_unmuted()
                    if self._backlog and frame[:2] != PRODUCE:
                        await self._backlog.emptied()
                    reply = await dispatch(self._served, frame, self._context, received)
                finally:
                    self._queued_bytes -= len(frame)
                    self._pool.release(len(frame))
                self._last_active = self._loop.time()
                if self._context.muted_until > self._last_active:
                    self._mute()  # throttled: read nothing more until then (this answer still goes now)
                instruments = self._context.instruments
                if not self._backlog and not asyncio.iscoroutine(reply):
                    if reply:
                        ready = time.perf_counter()
                        # the common case: bytes, written now, or with the answers of the frames behind
                        if not self._answers.write_now(reply, more=not self._queue.empty()):
                            await self._answers.send(reply)
                        if instruments is not None:
                            instruments.answer_written(received, ready, ready)
                    if self._context.session is not None and self._context.session.failed:
                        self._answers.close()  # authentication failed: answered, then closed, as Kafka
                    continue
                await self._backlog.add(reply, instruments, received)
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            self._fail(exc)
        finally:
            # frames still queued when the connection went: nobody handles them now
            self._pool.release(self._queued_bytes)
            self._queued_bytes = 0
            if self._transport.is_closing():
                self._ended()
                self._backlog.close()  # the answers' tasks run on (answer_backlog.py); nobody reads them

    def _mute(self) -> None:
        """Stop reading until the context's muted_until; a timer resumes (Kafka mutes the channel)."""
        if self._muted:
            return
        self._muted = True
        self._apply_reading()
        self._loop.call_at(self._context.muted_until, self._unmute)

    def _unmute(self) -> None:
        if self._context.muted_until > self._loop.time():  # throttled again meanwhile
            self._loop.call_at(self._context.muted_until, self._unmute)
            return
        self._muted = False
        if not self._transport.is_closing():
            self._apply_reading()

    async def _wait_unmuted(self) -> None:
        """Requests read before the throttle wait it out too; only this connection's task sleeps."""
        delay = self._context.muted_until - self._loop.time()
        if delay > 0:
            self._mute()
            await asyncio.sleep(delay)

    def _fail(self, exc: Exception) -> None:
        if isinstance(exc, (PeerProtocolError, ConnectionClosed)):
            log.warning("closing connection from %s: %s", self.peer, exc)
        else:
            log.error("closing connection from %s after an internal error", self.peer, exc_info=exc)
        self._transport.abort()


async def serve(served: Connections, sock: socket.socket, listener: Listener | None = None,
                pool: RequestMemoryPool | None = None,
                ssl_context: ssl.SSLContext | None = None) -> asyncio.AbstractServer:
    """Listen on `sock`, bound beforehand (lifecycle.py: the port is known before the logs open),
    for `listener` (listeners.py; default: the broker's first). Listeners share one `pool`. With
    `ssl_context` (an SSL / SASL_SSL listener) each connection first completes a TLS handshake."""
    loop = asyncio.get_running_loop()
    shared = pool or RequestMemoryPool(served.config.queued_max_request_bytes)
    served_on = listener or listeners_of(served.config)[0]
    if ssl_context is None:
        return await loop.create_server(lambda: KafkaConnection(served, shared, served_on), sock=sock)
    tls = ssl_context  # narrowed, for the lambda
    return await loop.create_server(
        lambda: TlsAcceptor(lambda: KafkaConnection(served, shared, served_on), tls, served_on,
                            served.config.connections_max_idle_ms), sock=sock)
