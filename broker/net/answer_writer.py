"""Writing one connection's answers: bytes in memory and file regions, in WRITE_BATCH-byte writes
or with os.sendfile, waiting whenever the transport asks the writer to pause.

Small answers made one after another (a pipelining client's requests, read together and served
without the loop suspending) leave in one send: the caller says whether another answer follows
at once (`more`), and the writer holds this one until an answer that has none, HOLD_MAX_S or
WRITE_BATCH, or the loop coming round (call_soon: the caller suspended in between). A lone
answer is written at once. Each send on loopback also wakes the client; per request that cut
the broker's CPU by ~20 % (64 partitions, 8 in flight: 116-122 -> 93-97 µs segment,
bench/request_cost.py). Every write goes through this writer, so a held answer always leaves
before the next one, and close() flushes.

An answer is a list of chunks: bytes, or file regions of the log (segment.log.FileRegion), which
leave the disk untouched. A large region goes out by sendfile; small ones (a fetch of many small
batches has thousands) are read and joined into writes of about WRITE_BATCH bytes, each waiting
for the transport to drain and giving the loop to other connections, so one answer neither
monopolizes the event loop nor piles up in memory. Under TLS the kernel cannot send file regions
(os.sendfile would bypass the encryption): every region is read into memory the same way.

A peer that left stops the answer: writes into a lost transport only count up asyncio's
'socket.send() raised exception' warnings (4,000,195 lines for one probe's fetch), and sendfile
on it raises.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from typing import IO, Any, cast

from segment.log import FileRegion

SENDFILE_MIN = 64 * 1024  # smaller regions are cheaper to pread and write
WRITE_BATCH = 256 * 1024  # small regions are joined into writes of about this size
HOLD_MAX_S = 0.0005  # the longest the first of several held answers waits for the ones behind it
# A chunk already in memory (a share fetch cuts the regions it was given at batch boundaries, as views).
IN_MEMORY = (bytes, bytearray, memoryview)


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

    def readinto(self, buf: bytearray | memoryview) -> int:
        n = os.preadv(self._fd, [buf], self._pos)
        self._pos += n
        return n


class AnswerWriter:
    _transport: asyncio.Transport  # set by connected(), before any send

    def __init__(self, tls: bool, wrote: Callable[[], None]) -> None:
        """`tls`: the transport encrypts, so no sendfile. `wrote`: called after each write (the
        connection is not idle while its answer goes out)."""
        self._tls = tls
        self._wrote = wrote
        self._drained: asyncio.Future[None] | None = None
        self._held: list[bytes | bytearray | memoryview] = []  # answers' chunks, written at the next flush
        self._held_size = 0
        self._held_since = 0.0

    def connected(self, transport: asyncio.Transport) -> None:
        self._transport = transport

    def pause(self) -> None:
        """The transport's buffer is full (asyncio.Protocol.pause_writing)."""
        self._drained = asyncio.get_running_loop().create_future()

    def resume(self) -> None:
        """The transport drained (resume_writing), or the peer is gone: a waiting write goes on."""
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    def write_now(self, chunks: list[Any], more: bool) -> bool:
        """Write an answer of bytes alone, up to WRITE_BATCH of them, now (held with the ones
        after it when `more` says another follows at once), unless the transport asked the
        writer to pause; False when it must go through `send`. An answer for a peer that left
        counts as written (nothing is)."""
        if self._transport.is_closing():
            return True
        if self._drained is not None or not all(isinstance(chunk, IN_MEMORY) for chunk in chunks):
            return False
        size = sum(map(len, chunks))
        if size > WRITE_BATCH:
            return False
        first = not self._held
        self._held += chunks  # joined once, by flush: each answer's chunks and the answers together
        self._held_size += size
        if more:
            loop = asyncio.get_running_loop()
            if first:  # the loop flushes if the caller suspends before the next answer
                self._held_since = loop.time()
                loop.call_soon(self.flush)
            more = self._held_size < WRITE_BATCH and loop.time() - self._held_since < HOLD_MAX_S
        if not more:
            self.flush()
        self._wrote()
        return True

    def flush(self) -> None:
        """Write the held answers, in one write."""
        if not self._held:
            return
        data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held, self._held_size = [], 0
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        """Close the transport once the answers written so far are on their way."""
        self.flush()
        self._transport.close()

    async def send(self, chunks: list[Any]) -> None:
        """Write one answer (see the module docstring): `chunks` are byte buffers and FileRegions
        (wire.protocol.encode_response)."""
        transport = self._transport
        loop = asyncio.get_running_loop()
        self.flush()  # the answers before this one go first
        joined: list[bytes | bytearray | memoryview] = []
        size = 0
        for chunk in chunks:
            if transport.is_closing():
                return
            if isinstance(chunk, IN_MEMORY) or chunk.size < SENDFILE_MIN or self._tls:
                for piece in _pieces(chunk):
                    joined.append(piece)
                    size += len(piece)
                    if size >= WRITE_BATCH:
                        await self._write(b"".join(joined), more=True)
                        joined, size = [], 0
                        if transport.is_closing():
                            return
                continue
            if joined:
                await self._write(b"".join(joined), more=True)
                joined, size = [], 0
            try:
                # asyncio reads the file through fileno(), seek() and readinto() alone: _FdFile has them
                await loop.sendfile(transport, cast(IO[bytes], _FdFile(chunk.fd)), chunk.position, chunk.size)
            except ConnectionError:
                transport.abort()  # the peer reset mid-file (sendfile writes past the transport)
                return
            except RuntimeError:
                if transport.is_closing():
                    return  # the peer left while the transport drained before the sendfile
                raise
        if joined and not transport.is_closing():
            await self._write(b"".join(joined), more=False)
        self._wrote()

    async def _write(self, data: bytes, more: bool) -> None:
        """`more`: the answer goes on, so let other connections run before its next piece."""
        self._transport.write(data)
        self._wrote()
        if self._drained is not None:
            await self._drained
        elif more:
            await asyncio.sleep(0)


def _pieces(chunk: bytes | bytearray | memoryview | FileRegion) -> Iterator[bytes | bytearray | memoryview]:
    """A chunk's bytes: itself, or a file region read in pieces of at most WRITE_BATCH bytes."""
    if isinstance(chunk, IN_MEMORY):
        yield chunk
        return
    end = chunk.position + chunk.size
    for position in range(chunk.position, end, WRITE_BATCH):
        yield os.pread(chunk.fd, min(WRITE_BATCH, end - position), position)
