"""Kafka's variable-length integers, read and written here only.

    unsigned varint   7 bits a byte, the low group first; a set high bit says another byte follows
    varint / varlong  a signed int32 / int64 zigzagged (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...),
                      then laid out as an unsigned varint of at most 5 / 10 bytes

Records use the signed ones for their length, deltas, key, value and header sizes
(records.py draws the layout); request and response headers use the unsigned one for their
tagged fields (protocol.py). As Java's ByteUtils does, a varint whose last byte is its 5th
(10th) keeps only the low 32 (64) bits of what it accumulated; a longer one is malformed.
"""

from __future__ import annotations

INT32_BYTES, INT32_MASK = 5, (1 << 32) - 1
INT64_BYTES, INT64_MASK = 10, (1 << 64) - 1


class MalformedVarint(ValueError):
    """Bytes that are not a varint: longer than its type allows, or cut by the end of its data.
    Each reader raises its own error in turn, saying whose bytes were malformed."""


def read_varint(data, pos: int, end: int, max_bytes: int = INT32_BYTES, mask: int = INT32_MASK,
                unsigned: bool = False) -> tuple[int, int]:
    """(value, position after it) of the zigzag varint at data[pos], which must end by `end`;
    a varlong with INT64_BYTES and INT64_MASK, an unsigned varint with `unsigned`. One function,
    not a wrapper per kind: it runs for every field of every record a Python walk reads."""
    raw = shift = 0
    limit = pos + max_bytes
    if limit > end:
        limit = end
    while pos < limit:
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            raw &= mask
            return (raw if unsigned else (raw >> 1) ^ -(raw & 1)), pos
        shift += 7
    if pos >= end:
        raise MalformedVarint("varint runs past the end of its data")
    raise MalformedVarint(f"varint longer than {max_bytes} bytes")


def write_varint(value: int, out: bytearray) -> None:
    """Append `value` (an int32 or int64) zigzagged, as a varint or varlong."""
    value = (value << 1) ^ (value >> 63)
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
