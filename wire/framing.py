"""Kafka framing, sans-IO: bytes in, whole request frames out.

Every Kafka request and response is

    +----------------+---------------------------+
    | size: int32 BE | size bytes of header+body |
    +----------------+---------------------------+

A frame larger than the configured limit (socket.request.max.bytes, 100 MiB by
default) or with a negative size cannot be answered: the peer broke the
protocol, and the transport closes that one connection.
"""

from __future__ import annotations

import struct

DEFAULT_MAX_REQUEST_SIZE = 100 * 1024 * 1024

_SIZE = struct.Struct(">i")


class PeerProtocolError(Exception):
    """The peer sent bytes we cannot answer; its connection is closed."""


class FrameTooLarge(PeerProtocolError):
    pass


class FrameDecoder:
    """Accumulates received bytes and cuts them into frames."""

    __slots__ = ("_buf", "_max_size", "_need")

    def __init__(self, max_size: int = DEFAULT_MAX_REQUEST_SIZE) -> None:
        self._buf = bytearray()
        self._max_size = max_size
        self._need = -1  # size of the frame being received, -1 while the prefix is incomplete

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf
        buf += data
        frames: list[bytes] = []
        pos = 0
        while True:
            if self._need < 0:
                if len(buf) - pos < 4:
                    break
                (size,) = _SIZE.unpack_from(buf, pos)
                if size < 0:
                    raise PeerProtocolError(f"negative frame size {size}")
                if size > self._max_size:
                    raise FrameTooLarge(
                        f"request of {size} bytes exceeds socket.request.max.bytes={self._max_size}"
                    )
                self._need = size
                pos += 4
            if len(buf) - pos < self._need:
                break
            frames.append(bytes(buf[pos : pos + self._need]))
            pos += self._need
            self._need = -1
        if pos:
            del buf[:pos]
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buf)


def frame(payload_size: int) -> bytes:
    """The 4-byte size prefix for a payload of payload_size bytes."""
    return _SIZE.pack(payload_size)
