"""The field primitives of a response body that a handler writes straight to bytes
(wire/metadata_response.py, wire/describe_log_dirs_response.py) instead of through kio's
generic entity writer, which costs a dataclass and a type-checked walk per entry; and of the
`__transaction_state` records (broker/txn/txn_log.py), which use Kafka's same encodings.

Flexible versions write arrays and strings "compact" (length + 1 as an unsigned varint, 0 for
null) and end every struct with its tagged fields: none here, one 0x00 byte (NO_TAGS). Older
versions write int32 array lengths and int16 string lengths, -1 for null. Fixed-width integers
are big-endian in both.
"""

from __future__ import annotations

import struct
from typing import Sequence

_H = struct.Struct(">h")
_I = struct.Struct(">i")
NO_TAGS = b"\x00"


def uvarint(n: int) -> bytes:
    """`n` (≥ 0) as an unsigned varint: 7 bits a byte, low bits first, high bit set on all but the last."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class BodyWriter:
    """The length and string encodings of one version: compact (flexible) or classic."""

    def __init__(self, flexible: bool) -> None:
        self.flexible = flexible
        self._ints: dict[tuple[int, ...], bytes] = {}  # replica lists repeat: encode each once

    def length(self, n: int | None) -> bytes:
        if self.flexible:
            return uvarint(0 if n is None else n + 1)
        return _I.pack(-1 if n is None else n)

    def string(self, s: str | None) -> bytes:
        if s is None:
            return uvarint(0) if self.flexible else _H.pack(-1)
        data = s.encode()
        return (uvarint(len(data) + 1) if self.flexible else _H.pack(len(data))) + data

    def int32s(self, values: Sequence[int]) -> bytes:
        key = tuple(values)
        encoded = self._ints.get(key)
        if encoded is None:
            encoded = self._ints[key] = self.length(len(key)) + struct.pack(f">{len(key)}i", *key)
        return encoded
