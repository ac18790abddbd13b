"""Seeded mutations of valid Kafka request frames, for the fuzz test (test_fuzz.py).

A valid frame per served (api, version) is built from kio's request schema with plausible
values (the fuzz topic's name in every string, small numbers, a real record batch in
Produce), then `FrameFuzzer.frames(n)` hands out n mutated copies, the same n for the same
seed: whatever the broker does with frame i can be reproduced by generating frame i again.

To mutate lengths and counts where they are (not just where a random byte happens to be),
each sample body is walked once with its schema and the offset of every length or count
prefix is recorded:

    non-flexible versions: string length int16 | bytes/records length int32 | array count int32
    flexible versions:     uvarint of (length or count + 1), 0 meaning null

Nothing here imports the broker: the frames come from kio, as a client's would.
"""

from __future__ import annotations

import dataclasses
import datetime
import random
import struct
import uuid
from dataclasses import dataclass, fields, is_dataclass
from types import NoneType, UnionType
from typing import get_args, get_origin

from kio.schema.errors import ErrorCode
from kio.serial._introspect import classify_field, get_field_tag, is_optional

from compat_tests.helpers.raw_kafka import encode_body, encode_header, frame, request_class

_FIXED_SIZES = {
    "bool": 1, "int8": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
    "timedelta_i32": 4, "int64": 8, "timedelta_i64": 8, "datetime_i64": 8, "float64": 8, "uuid": 16,
}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_INTS = ("int16", "int32", "int64", "timedelta_i32", "timedelta_i64", "datetime_i64")
_HEADER_FIXED = 8  # api_key i16 | api_version i16 | correlation_id i32, then client_id

# What a length or count prefix is set to by "extreme_length" (then encoded to its width).
_EXTREMES = (-2, -1, 0, 1, 0x7FFF, 0x7FFFFFFF, -0x80000000, 0xFFFFFFFF, 1 << 20)


@dataclass(frozen=True)
class Prefix:
    """A length or count prefix in a frame: where it starts, how many bytes it takes, its kind."""

    offset: int
    width: int  # 2 or 4 fixed, or the uvarint's byte count
    varint: bool
    kind: str  # "string", "bytes", "records" or "array"


@dataclass(frozen=True)
class Sample:
    api_key: int
    version: int
    frame: bytes  # size prefix included
    prefixes: tuple[Prefix, ...]
    records_at: int  # where a Produce record batch starts in the frame, -1 if none
    ints: tuple[tuple[int, int], ...]  # (offset, width) of every int16/int32/int64 field


@dataclass(frozen=True)
class Fuzzed:
    index: int
    mutation: str
    api_key: int
    version: int
    data: bytes
    incomplete: bool  # the size prefix claims more than is sent: the broker waits, we hang up


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def encode_uvarint(value: int) -> bytes:
    value &= 0xFFFFFFFF
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _nullable(field) -> bool:
    return get_origin(field.type) is UnionType and NoneType in get_args(field.type)


class _Walker:
    """Records every length/count prefix of a well-formed body (kio wrote it, so it parses)."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.found: list[Prefix] = []
        self.ints: list[tuple[int, int]] = []

    def _length(self, pos: int, flexible: bool, wide: bool, kind: str) -> tuple[int, int]:
        if flexible:
            n, end = _uvarint(self.buf, pos)
            self.found.append(Prefix(pos, end - pos, True, kind))
            return n - 1, end
        codec = _I32 if wide else _I16
        self.found.append(Prefix(pos, codec.size, False, kind))
        return codec.unpack_from(self.buf, pos)[0], pos + codec.size

    def entity(self, cls, pos: int) -> int:
        flexible = bool(cls.__flexible__)
        for field in fields(cls):
            if get_field_tag(field) is not None:
                continue
            kind = classify_field(field)
            count = 1
            if kind.is_array:
                count, pos = self._length(pos, flexible, True, "array")
            for _ in range(max(count, 0)):
                pos = self._one(field, kind, flexible, pos)
        if flexible:
            count, pos = _uvarint(self.buf, pos)
            for _ in range(count):
                _tag, pos = _uvarint(self.buf, pos)
                size, pos = _uvarint(self.buf, pos)
                pos += size
        return pos

    def _one(self, field, kind, flexible: bool, pos: int) -> int:
        if is_dataclass(kind.type_):
            if not kind.is_array and is_optional(field):
                if self.buf[pos] == 0xFF:
                    return pos + 1
                pos += 1
            return self.entity(kind.type_, pos)
        kafka_type = field.metadata["kafka_type"]
        if kafka_type in _FIXED_SIZES:
            if kafka_type in _INTS:
                self.ints.append((pos, _FIXED_SIZES[kafka_type]))
            return pos + _FIXED_SIZES[kafka_type]
        n, pos = self._length(pos, flexible, kafka_type != "string", kafka_type)
        return pos + max(n, 0)


def _value(kafka_type: str, topic: str, batch: bytes):
    return {
        "bool": False, "int8": 0, "int16": 1, "uint16": 1, "int32": 1, "int64": 0, "float64": 0.5,
        "string": topic, "bytes": b"fuzz", "records": batch, "uuid": uuid.UUID(int=0),
        "error_code": ErrorCode.none, "timedelta_i32": datetime.timedelta(milliseconds=100),
        "timedelta_i64": datetime.timedelta(milliseconds=100),
        "datetime_i64": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
    }[kafka_type]


def sample_entity(cls, topic: str, batch: bytes):
    """Every field set to a plausible value, every array with one element."""
    values = {}
    for field in dataclasses.fields(cls):
        if get_field_tag(field) is not None:
            continue
        kind = classify_field(field)
        if is_dataclass(kind.type_):
            one = sample_entity(kind.type_, topic, batch)
        else:
            one = _value(field.metadata["kafka_type"], topic, batch)
        values[field.name] = (one,) if kind.is_array else one
    return cls(**values)


def build_sample(api_key: int, version: int, topic: str, batch: bytes) -> Sample:
    cls = request_class(api_key, version)
    header = encode_header(api_key, version, 1, "fuzz")
    body = encode_body(sample_entity(cls, topic, batch))
    walker = _Walker(body)
    walker.entity(cls, 0)
    at = 4 + len(header)  # body offsets -> frame offsets
    prefixes = [Prefix(4 + _HEADER_FIXED, 2, False, "string")]  # client_id
    prefixes += [dataclasses.replace(p, offset=p.offset + at) for p in walker.found]
    records = body.find(batch) if api_key == 0 else -1
    return Sample(api_key, version, frame(header + body), tuple(prefixes), records + at if records >= 0 else -1,
                  tuple((pos + at, width) for pos, width in walker.ints))


class FrameFuzzer:
    """n mutated frames from the samples, reproducibly for one seed."""

    def __init__(self, samples: list[Sample], served: dict[int, tuple[int, int]], seed: int) -> None:
        self.samples = samples
        self.served = served
        self.seed = seed
        self.mutations = [
            ("valid", 1, self._valid), ("bit_flips", 6, self._bit_flips),
            ("truncated", 3, self._truncated), ("extreme_length", 5, self._extreme_length),
            ("random_count", 3, self._random_count), ("null_prefix", 3, self._null_prefix),
            ("version_out_of_range", 1, self._version), ("other_versions_body", 1, self._other_body),
            ("unknown_api_key", 1, self._unknown_api), ("garbage_tail", 1, self._garbage_tail),
            ("frame_size", 1, self._frame_size), ("batch_recrc", 2, self._batch_recrc),
            ("extreme_int", 5, self._extreme_int),
        ]

    def frames(self, n: int) -> list[Fuzzed]:
        rnd = random.Random(self.seed)
        names = [m[0] for m in self.mutations]
        weights = [m[1] for m in self.mutations]
        out = []
        for i in range(n):
            sample = rnd.choice(self.samples)
            k = rnd.choices(range(len(names)), weights)[0]
            data, incomplete = self.mutations[k][2](rnd, sample)
            out.append(Fuzzed(i, names[k], sample.api_key, sample.version, data, incomplete))
        return out

    # Each mutation: (rnd, sample) -> (frame bytes, incomplete). Frames keep a correct size
    # prefix unless the mutation is about the size prefix itself.

    @staticmethod
    def _resized(payload: bytes | bytearray) -> tuple[bytes, bool]:
        return frame(bytes(payload)), False

    def _valid(self, rnd, s: Sample):
        return s.frame, False

    def _bit_flips(self, rnd, s: Sample):
        out = bytearray(s.frame)
        for _ in range(rnd.randint(1, 8)):
            bit = rnd.randrange(32, len(out) * 8)  # not the size prefix
            out[bit // 8] ^= 1 << (bit % 8)
        return bytes(out), False

    def _truncated(self, rnd, s: Sample):
        return self._resized(s.frame[4:4 + rnd.randrange(0, len(s.frame) - 4)])

    def _set_prefix(self, s: Sample, p: Prefix, value: int) -> tuple[bytes, bool]:
        if p.varint:
            raw = encode_uvarint(value + 1)
        elif p.width == 2:
            raw = _I16.pack((value + 0x8000) % 0x10000 - 0x8000)
        else:
            raw = _I32.pack((value + 0x80000000) % 0x100000000 - 0x80000000)
        return self._resized(s.frame[4:p.offset] + raw + s.frame[p.offset + p.width:])

    def _extreme_length(self, rnd, s: Sample):
        return self._set_prefix(s, rnd.choice(s.prefixes), rnd.choice(_EXTREMES))

    def _random_count(self, rnd, s: Sample):
        arrays = [p for p in s.prefixes if p.kind == "array"] or list(s.prefixes)
        return self._set_prefix(s, rnd.choice(arrays), rnd.choice((0, 2, 3, rnd.randint(4, 5000))))

    def _extreme_int(self, rnd, s: Sample):
        """A number field (partition, offset, timeout, max_bytes, epoch, count...) at an extreme:
        the frame still parses, the handler meets the value."""
        if not s.ints:
            return self._bit_flips(rnd, s)
        pos, width = rnd.choice(s.ints)
        bits = width * 8
        value = rnd.choice((-1, 0, -(1 << (bits - 1)), (1 << (bits - 1)) - 1, rnd.randint(2, 1 << 16),
                            -rnd.randint(2, 1 << 16)))
        raw = (value % (1 << bits)).to_bytes(width, "big")
        return s.frame[:pos] + raw + s.frame[pos + width:], False

    def _null_prefix(self, rnd, s: Sample):
        return self._set_prefix(s, rnd.choice(s.prefixes), -1)

    def _version(self, rnd, s: Sample):
        lo, hi = self.served[s.api_key]
        version = rnd.choice((lo - 1, hi + 1, hi + rnd.randint(2, 100), -1, 0x7FFF, -0x8000))
        return self._resized(s.frame[4:6] + _I16.pack(version) + s.frame[8:])

    def _other_body(self, rnd, s: Sample):
        """A served version number on another version's body (flexible vs not, fields missing)."""
        lo, hi = self.served[s.api_key]
        return self._resized(s.frame[4:6] + _I16.pack(rnd.randint(lo, hi)) + s.frame[8:])

    def _unknown_api(self, rnd, s: Sample):
        key = rnd.choice([k for k in range(-3, 100) if k not in self.served] + [0x7FFF, -0x8000])
        return self._resized(_I16.pack(key) + s.frame[6:])

    def _garbage_tail(self, rnd, s: Sample):
        return self._resized(s.frame[4:] + rnd.randbytes(rnd.randint(1, 64)))

    def _frame_size(self, rnd, s: Sample):
        size = rnd.choice((-1, -0x80000000, 0, 1, 9, len(s.frame) + 10, 0x7FFFFFFF, 200 << 20))
        incomplete = size > len(s.frame) - 4
        return _I32.pack(size) + s.frame[4:], incomplete

    def _batch_recrc(self, rnd, s: Sample):
        """Produce only: bytes inside the record batch changed and its CRC32C made right again,
        so the broker's record validation, not the CRC check, meets the damage."""
        if s.records_at < 0:
            return self._bit_flips(rnd, s)
        import crc32c

        out = bytearray(s.frame)
        start = s.records_at
        (length,) = _I32.unpack_from(out, start + 8)
        end = start + 12 + length
        for _ in range(rnd.randint(1, 4)):
            pos = rnd.randrange(start + 21, end)  # attributes onward: what the CRC covers
            out[pos] = rnd.randrange(256)
        struct.pack_into(">I", out, start + 17, crc32c.crc32c(bytes(out[start + 21:end])))
        return bytes(out), False

