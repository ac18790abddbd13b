"""Every length and count in a request body, checked before kio's native reader sees it.

Why this exists: kio 0.6.5's reader preallocates an array from the count the client claims.
A compact array count near 2^32 (`ff ff ff ff 0f`) makes that allocation fail, and a failed
allocation in Rust aborts the whole process: one hostile request would take every client's
broker down. So the body is walked first, with the same schema classes kio decodes with, and
every string, bytes, records length and every array count is checked against the bytes that
remain (an array of n elements needs at least n times its element's smallest encoding), and
an array the schema does not let be null must not be (kio would hand the handler None). A
request that fails gets PeerProtocolError, which closes that one connection with a log line,
exactly like a body the reader itself rejects.

The walk is compiled once per request class into closures `step(buf, pos, end) -> pos`, so a
Produce v9 request costs a few microseconds; record bytes are skipped by their length, never
read. Tagged fields are skipped by their declared size (their contents are bounded by it).
"""

from __future__ import annotations

import struct
from dataclasses import Field, fields, is_dataclass
from functools import cache
from types import NoneType, UnionType
from typing import Callable, get_args, get_origin

from kio.serial._introspect import classify_field, get_field_tag, is_optional

from .framing import PeerProtocolError
from .varint import MalformedVarint, read_varint

Step = Callable[[bytes, int, int], int]

_FIXED_SIZES = {
    "bool": 1, "int8": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
    "timedelta_i32": 4, "int64": 8, "timedelta_i64": 8, "datetime_i64": 8, "float64": 8,
    "uuid": 16,
}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def check_request_body(cls, buf: bytes, pos: int) -> None:
    """Raise PeerProtocolError if any length or count in buf[pos:] claims more than remains."""
    _entity_step(cls)[0](buf, pos, len(buf))


def _fail(what: str, claimed: int, remaining: int) -> PeerProtocolError:
    return PeerProtocolError(f"{what} claims {claimed} bytes or elements, only {remaining} bytes remain")


def _uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos < end and buf[pos] < 0x80:  # most lengths and counts: one byte
        return buf[pos], pos + 1
    try:
        return read_varint(buf, pos, end, unsigned=True)
    except MalformedVarint:
        raise PeerProtocolError("malformed unsigned varint in request body") from None


def _skip_tagged(buf: bytes, pos: int, end: int) -> int:
    count, pos = _uvarint(buf, pos, end)
    if count > end - pos:
        raise _fail("tagged field count", count, end - pos)
    for _ in range(count):
        _tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        if size > end - pos:
            raise _fail("tagged field", size, end - pos)
        pos += size
    return pos


def _length(buf: bytes, pos: int, end: int, flexible: bool, wide: bool) -> tuple[int, int]:
    """A length or count prefix; -1 means null. `wide`: int32 (bytes, arrays) vs int16 (strings)."""
    if flexible:
        n, pos = _uvarint(buf, pos, end)
        return n - 1, pos
    codec = _I32 if wide else _I16
    if pos + codec.size > end:
        raise PeerProtocolError("length prefix runs past the end of the request")
    return codec.unpack_from(buf, pos)[0], pos + codec.size


def _fixed(size: int) -> Step:
    def step(buf: bytes, pos: int, end: int) -> int:
        if pos + size > end:
            raise PeerProtocolError("field runs past the end of the request")
        return pos + size

    return step


def _sized(kind: str, flexible: bool) -> Step:
    wide = kind != "string"

    def step(buf: bytes, pos: int, end: int) -> int:
        n, pos = _length(buf, pos, end, flexible, wide)
        if n > end - pos:
            raise _fail(kind, n, end - pos)
        return pos + max(n, 0)

    return step


def _array(element: Step, element_min: int, flexible: bool, what: str, nullable: bool) -> Step:
    def step(buf: bytes, pos: int, end: int) -> int:
        n, pos = _length(buf, pos, end, flexible, True)
        if n < 0 and not nullable:
            # Kafka's generated readers refuse it in the same words, and the broker then closes
            # the connection (RequestContext.parseRequest -> InvalidRequestException).
            raise PeerProtocolError(f"non-nullable field {what} was serialized as null")
        if n * element_min > end - pos:
            raise _fail(f"array of {what}", n, end - pos)
        for _ in range(n):
            pos = element(buf, pos, end)
        return pos

    return step


def _nullable_entity(entity: Step) -> Step:
    # A nullable struct is preceded by an int8: -1 null, 1 present.
    def step(buf: bytes, pos: int, end: int) -> int:
        if pos >= end:
            raise PeerProtocolError("field runs past the end of the request")
        return pos + 1 if buf[pos] == 0xFF else entity(buf, pos + 1, end)

    return step


def _nullable_array(field: Field) -> bool:
    # kio types a nullable array `tuple[X, ...] | None`, a non-nullable one `tuple[X, ...]`
    # (its is_optional also answers True for non-nullable elements, so it cannot tell).
    return get_origin(field.type) is UnionType and NoneType in get_args(field.type)


def _primitive(kafka_type: str, flexible: bool) -> tuple[Step, int]:
    if kafka_type in _FIXED_SIZES:
        size = _FIXED_SIZES[kafka_type]
        return _fixed(size), size
    if kafka_type in ("string", "bytes", "records"):
        return _sized(kafka_type, flexible), 1 if flexible else (2 if kafka_type == "string" else 4)
    raise TypeError(f"unknown kafka_type {kafka_type!r}")  # a new kio type: teach this module


@cache
def _entity_step(cls) -> tuple[Step, int]:
    """The step for one entity and the fewest bytes it can encode to."""
    flexible = bool(cls.__flexible__)
    steps: list[Step] = []
    min_size = 1 if flexible else 0  # the tagged-field count
    fixed_run = 0  # adjacent fixed-size fields (a Produce's acks and timeout), checked as one step
    for field in fields(cls):
        if get_field_tag(field) is not None:
            continue  # lives in the tagged section, skipped by size below
        kind = classify_field(field)
        if not kind.is_array and not is_dataclass(kind.type_) and field.metadata["kafka_type"] in _FIXED_SIZES:
            fixed_run += _FIXED_SIZES[field.metadata["kafka_type"]]
            continue
        if fixed_run:
            steps.append(_fixed(fixed_run))
            min_size, fixed_run = min_size + fixed_run, 0
        if is_dataclass(kind.type_):
            step, size = _entity_step(kind.type_)
            if not kind.is_array and is_optional(field):
                step, size = _nullable_entity(step), 1
        else:
            step, size = _primitive(field.metadata["kafka_type"], flexible)
        if kind.is_array:
            step = _array(step, size, flexible, field.name, _nullable_array(field))
            size = 1 if flexible else 4
        steps.append(step)
        min_size += size
    if fixed_run:
        steps.append(_fixed(fixed_run))
        min_size += fixed_run

    if flexible:
        def walk(buf: bytes, pos: int, end: int) -> int:
            for step in steps:
                pos = step(buf, pos, end)
            if pos < end and buf[pos] == 0:  # no tagged fields, the usual case
                return pos + 1
            return _skip_tagged(buf, pos, end)
    else:
        def walk(buf: bytes, pos: int, end: int) -> int:
            for step in steps:
                pos = step(buf, pos, end)
            return pos

    return walk, min_size
