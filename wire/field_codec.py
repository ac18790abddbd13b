"""Kafka's field encodings for bytes that are not a request: the records of the internal topics
(`__consumer_offsets`, `__transaction_state`) and the consumer protocol's payloads.

Those bytes use the same field types as the protocol (big-endian fixed-width integers; classic
strings as int16 length + UTF-8, -1 for null; classic bytes as int32 length; compact strings,
bytes and arrays as unsigned-varint length + 1, 0 for null; tagged fields as a count, then tag,
size, data), so kio's readers and writers, which decode every request, encode them here too.
Each module that defines such a record states its own layout; this one holds the cursor over one
buffer, and turns every decoding failure into the caller's error class, so that a replay meeting
a bad record catches one exception and skips it.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable

from kio.serial import readers as r
from kio.serial import writers as w
from kio.serial.errors import DecodeError


class FieldReader:
    """Reads fields in order from `data`; any that is cut short, too long or not UTF-8 raises
    `error` (a ValueError subclass of the caller's)."""

    def __init__(self, data: bytes, error: type[ValueError]) -> None:
        self.data, self.pos, self.error = bytes(data), 0, error

    def _read(self, reader: Callable):
        try:
            value, size = reader(self.data, self.pos)
        except (DecodeError, ValueError) as exc:
            raise self.error(f"byte {self.pos}: {exc}") from None
        self.pos += size
        return value

    def i8(self) -> int:
        return self._read(r.read_int8)

    def i16(self) -> int:
        return self._read(r.read_int16)

    def i32(self) -> int:
        return self._read(r.read_int32)

    def i64(self) -> int:
        return self._read(r.read_int64)

    def uvarint(self) -> int:
        return self._read(r.read_unsigned_varint)

    def uuid(self) -> uuid.UUID:
        value = self._read(r.read_uuid)
        return value if value is not None else uuid.UUID(int=0)

    def string(self) -> str:
        return self._read(r.read_legacy_string)

    def nullable_string(self) -> str | None:
        return self._read(r.read_nullable_legacy_string)

    def nullable_bytes(self) -> bytes | None:
        return self._read(r.read_nullable_legacy_bytes)

    def compact_nullable_string(self) -> str | None:
        return self._read(r.read_compact_string_nullable)

    def compact_bytes(self) -> bytes:
        return self._read(r.read_compact_string_as_bytes)

    def count(self, flexible: bool) -> int | None:
        """An array's length (None for a null array), never more than the bytes left could hold."""
        n = self._read(r.read_compact_array_length if flexible else r.read_legacy_array_length)
        if n is not None and n < 0:
            return None
        if n is not None and n > len(self.data) - self.pos:
            raise self.error(f"byte {self.pos}: an array of {n} in {len(self.data) - self.pos} bytes left")
        return n

    def array(self, read_one: Callable, flexible: bool) -> list:
        return [read_one() for _ in range(self.count(flexible) or 0)]

    def tagged_fields(self) -> dict[int, bytes]:
        fields = {}
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            if size > len(self.data) - self.pos:
                raise self.error(f"byte {self.pos}: tagged field {tag} of {size} bytes runs past the end")
            fields[tag] = self.data[self.pos:self.pos + size]
            self.pos += size
        return fields


class FieldWriter:
    """Appends fields in order; `value()` is the bytes so far. Each method returns the writer."""

    def __init__(self) -> None:
        self._out = io.BytesIO()

    def value(self) -> bytes:
        return self._out.getvalue()

    def _write(self, writer: Callable, v) -> FieldWriter:
        writer(self._out, v)
        return self

    def i8(self, v: int) -> FieldWriter:
        return self._write(w.write_int8, v)

    def i16(self, v: int) -> FieldWriter:
        return self._write(w.write_int16, v)

    def i32(self, v: int) -> FieldWriter:
        return self._write(w.write_int32, v)

    def i64(self, v: int) -> FieldWriter:
        return self._write(w.write_int64, v)

    def uvarint(self, v: int) -> FieldWriter:
        return self._write(w.write_unsigned_varint, v)

    def uuid(self, v: uuid.UUID) -> FieldWriter:
        return self._write(w.write_uuid, v)

    def nullable_string(self, v: str | None) -> FieldWriter:
        return self._write(w.write_nullable_legacy_string, v)

    def nullable_bytes(self, v: bytes | None) -> FieldWriter:
        return self._write(w.write_nullable_legacy_bytes, v)

    def compact_nullable_string(self, v: str | None) -> FieldWriter:
        return self._write(w.write_nullable_compact_string, v)

    def compact_bytes(self, v: bytes) -> FieldWriter:
        return self._write(w.write_compact_string, v)

    def count(self, n: int | None, flexible: bool) -> FieldWriter:
        """An array's length (None for a null array)."""
        if flexible:
            return self._write(w.write_compact_array_length, n)
        return self.i32(-1 if n is None else n)

    def array(self, items, write_one: Callable, flexible: bool) -> FieldWriter:
        self.count(len(items), flexible)
        for item in items:
            write_one(item)
        return self

    def raw(self, data: bytes) -> FieldWriter:
        self._out.write(data)
        return self

    def tagged_fields(self, fields: dict[int, bytes] | None = None) -> FieldWriter:
        self.uvarint(len(fields or {}))
        for tag, data in sorted((fields or {}).items()):
            self.uvarint(tag).uvarint(len(data)).raw(data)
        return self
