"""Response frames received in place, sans-IO: for an asyncio.BufferedProtocol that the socket
reads straight into.

    scratch (SCRATCH bytes)                         a frame larger than the scratch
    +------+----------+------+-----------+------+   +------------------------------+
    | done | size|... | size | body...   | free |   | body received so far | rest  |
    +------+----------+------+-----------+------+   +------------------------------+
           ^ start                       ^ end      ^ its own buffer      ^ filled

Small frames (most responses: an OffsetForLeaderEpoch answer, a fetch with nothing new) are
read many to a recv into the scratch buffer and copied out. A frame that cannot fit there (a
follower's fetch answer of up to 10 MiB) gets a buffer of its exact size: what already came
with its size prefix is copied in, and every later read lands in that buffer directly. So a
fetched record batch is copied once by the kernel, where a StreamReader and a frame decoder
copied it three more times (its buffer, read()'s bytes, the join of the pieces), each copy a
fresh megabyte that the allocator maps and the kernel zero-fills page by page.
"""

from __future__ import annotations

import struct

from .framing import FrameTooLarge, PeerProtocolError

SCRATCH = 64 * 1024

_SIZE = struct.Struct(">i")


class FrameReceiver:
    __slots__ = ("_max_size", "_scratch", "_start", "_end", "_big", "_filled")

    def __init__(self, max_size: int) -> None:
        self._max_size = max_size
        self._scratch = bytearray(SCRATCH)
        self._start = 0  # the first byte in the scratch not yet handed out
        self._end = 0  # the end of what was received into it
        self._big: bytearray | None = None  # the frame being received into its own buffer
        self._filled = 0  # how much of it has arrived

    def buffer(self) -> memoryview:
        """Where the next received bytes go (BufferedProtocol.get_buffer)."""
        if self._big is not None:
            return memoryview(self._big)[self._filled :]
        if self._end == SCRATCH:  # the start of a frame sits at the end: move it to the front
            pending = self._end - self._start
            self._scratch[:pending] = self._scratch[self._start : self._end]
            self._start, self._end = 0, pending
        return memoryview(self._scratch)[self._end :]

    def received(self, n: int) -> list[bytes | bytearray]:
        """`n` bytes were written into the last buffer(); returns the frames now whole (without
        their size prefix). Raises PeerProtocolError for a size that cannot be a frame."""
        if self._big is not None:
            self._filled += n
            if self._filled < len(self._big):
                return []
            frame, self._big = self._big, None
            return [frame]
        self._end += n
        frames: list[bytes | bytearray] = []
        scratch, start, end = self._scratch, self._start, self._end
        while end - start >= 4:
            (size,) = _SIZE.unpack_from(scratch, start)
            if size < 0:
                raise PeerProtocolError(f"negative frame size {size}")
            if size > self._max_size:
                raise FrameTooLarge(f"response of {size} bytes exceeds the limit of {self._max_size}")
            if end - start - 4 >= size:
                frames.append(bytes(scratch[start + 4 : start + 4 + size]))
                start += 4 + size
                continue
            if size > SCRATCH - 4:  # it can never fit: into a buffer of its own
                self._big = big = bytearray(size)
                self._filled = end - start - 4
                big[: self._filled] = scratch[start + 4 : end]
                start = end
            break
        if start == end:
            start = end = 0
        self._start, self._end = start, end
        return frames
