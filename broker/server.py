"""The asyncio transport: reads frames, writes response bytes and file regions; nothing else.

Requests on one connection are answered in order (clients pipeline and match
responses by order as well as correlation id); connections are independent.
A peer that breaks the protocol loses its own connection, with a log line.

Produce requests pipeline, as in Redpanda: a durable produce appends at once
and its answer (a task waiting for the fsync) joins the backlog, which a writer
task empties in request order while the next requests are read and appended,
so one fsync covers all of them (group commit within one connection). Any other
request first waits for the backlog to empty: a client that was told its
records are stored then sees them (read-your-writes on one connection).
"""

from __future__ import annotations

import asyncio
import logging
import os

from wire.framing import FrameDecoder, PeerProtocolError

from .client_address import client_host
from .dispatch import ConnectionClosed, dispatch

log = logging.getLogger(__name__)

CLOSED = object()  # queued by connection_lost in place of a frame

SENDFILE_MIN = 64 * 1024  # smaller regions are cheaper to pread and write
MAX_QUEUED_REQUESTS = 64
MAX_BACKLOG = 32  # answers waiting behind an fsync; beyond this the connection stops reading
PRODUCE = b"\x00\x00"  # a frame starts with its api key


class _FdFile:
    """The file-object face asyncio's sendfile wants, over a borrowed fd (never closed here)."""

    mode = "rb"

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pos = 0

    def fileno(self) -> int:
        return self._fd

    def seek(self, pos: int, whence: int = 0) -> int:
        self._pos = pos
        return pos

    def readinto(self, buf) -> int:
        n = os.preadv(self._fd, [buf], self._pos)
        self._pos += n
        return n


class KafkaConnection(asyncio.Protocol):
    def __init__(self, broker) -> None:
        self._broker = broker
        self._decoder = FrameDecoder(broker.config.max_request_size)
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._transport: asyncio.Transport | None = None
        self._task: asyncio.Task | None = None
        self._drained: asyncio.Future | None = None
        self._paused_reading = False
        self._backlog: asyncio.Queue = asyncio.Queue(MAX_BACKLOG)  # chunks or tasks, in order
        self._behind = 0  # answers put in the backlog and not yet written
        self._writer: asyncio.Task | None = None
        self.peer = "?"

    def connection_made(self, transport) -> None:
        self._transport = transport
        self.peer = "%s:%s" % (transport.get_extra_info("peername") or ("?", "?"))[:2]
        self._task = asyncio.create_task(self._serve())

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._decoder.feed(data)
        except PeerProtocolError as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            self._transport.abort()
            return
        for frame in frames:
            self._queue.put_nowait(frame)
        if self._queue.qsize() >= MAX_QUEUED_REQUESTS and not self._paused_reading:
            self._paused_reading = True
            self._transport.pause_reading()

    def connection_lost(self, exc) -> None:
        self._queue.put_nowait(CLOSED)  # ends _serve even if a cancel below is lost (3.11 wait_for)
        for task in (self._task, self._writer):
            if task is not None:
                task.cancel()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    async def _serve(self) -> None:
        transport = self._transport
        host = (transport.get_extra_info("peername") or ("",))[0]
        client_host.set(f"/{host}")
        try:
            while not transport.is_closing():
                frame = await self._queue.get()
                if frame is CLOSED:
                    break
                if self._paused_reading and self._queue.qsize() < MAX_QUEUED_REQUESTS // 2:
                    self._paused_reading = False
                    transport.resume_reading()
                if self._behind and frame[:2] != PRODUCE:
                    await self._backlog.join()
                reply = await dispatch(self._broker, frame)
                if not self._behind and not isinstance(reply, asyncio.Task):
                    if reply:
                        await self._send(reply)  # the common case: nothing waits for an fsync
                    continue
                if self._writer is None:
                    self._writer = asyncio.create_task(self._write_backlog())
                self._behind += 1
                await self._backlog.put(reply)
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            self._fail(exc)

    async def _write_backlog(self) -> None:
        """Write the backlog's answers in request order, each once its fsync is done."""
        try:
            while True:
                reply = await self._backlog.get()
                try:
                    if isinstance(reply, asyncio.Task):
                        # shielded: a client that leaves must not cancel the publish
                        reply = await asyncio.shield(reply)
                    if reply:
                        await self._send(reply)
                finally:
                    self._behind -= 1
                    self._backlog.task_done()
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        if isinstance(exc, (PeerProtocolError, ConnectionClosed)):
            log.warning("closing connection from %s: %s", self.peer, exc)
        else:
            log.error("closing connection from %s after an internal error", self.peer, exc_info=exc)
        self._transport.abort()

    async def _send(self, chunks: list) -> None:
        transport = self._transport
        loop = asyncio.get_running_loop()
        for chunk in chunks:
            if isinstance(chunk, (bytes, bytearray)):
                transport.write(chunk)
            elif chunk.size < SENDFILE_MIN:
                transport.write(os.pread(chunk.fd, chunk.size, chunk.position))
            else:
                await loop.sendfile(transport, _FdFile(chunk.fd), chunk.position, chunk.size)
        if self._drained is not None:
            await self._drained


async def serve(broker, host: str, port: int) -> asyncio.AbstractServer:
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: KafkaConnection(broker), host, port, reuse_address=True)
