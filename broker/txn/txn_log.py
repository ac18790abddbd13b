"""Transaction metadata as records of the internal topic `__transaction_state`.

Kafka's own schemas (TransactionLogKey / TransactionLogValue), so the topic reads like Kafka's.
Big-endian; v0 is classic (string = int16 length + UTF-8, array = int32 count, -1 = null); v1
is flexible (compact string / array = unsigned varint length + 1, 0 = null; each struct ends
with its tagged fields: unsigned varint count, then per field tag, size, bytes):

    key    int16 version=0 | string transactional_id
    value  int16 version (0 or 1)
           int64 producer_id
           int16 producer_epoch
           int32 transaction_timeout_ms
           int8  state                  (state.TxnState.byte)
           array partitions, null for Empty: per topic
                 string topic | array int32 partition | (v1) tagged fields, none
           int64 last_update_timestamp_ms
           int64 start_timestamp_ms
           (v1) tagged fields: 0 previous_producer_id int64, 1 next_producer_id int64,
                               2 client_transaction_version int16 (each only when not its default)
    a null value (tombstone) forgets the transactional id (transactional.id.expiration.ms).

Records of an id all go to partition `abs(java_hash(id)) % partitions`, Kafka's rule (the same
as a group's in `__consumer_offsets`). Written as v1, Kafka 4's; v0 is read too. The coordinator
writes the whole value each time; replay keeps the latest per key.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from broker.groups.offsets_log import partition_for as java_hash_partition
from broker.txn.state import TxnState

TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 1
NO_PRODUCER_ID = -1

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_TAG_PREVIOUS, _TAG_NEXT, _TAG_CLIENT_VERSION = 0, 1, 2


class BadRecord(ValueError):
    """A __transaction_state record this broker cannot read: the only error the decoders raise."""


def partition_for(transactional_id: str, partitions: int) -> int:
    return java_hash_partition(transactional_id, partitions)


@dataclass(frozen=True)
class TxnRecord:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: tuple[tuple[str, tuple[int, ...]], ...]  # sorted by topic, partitions sorted
    last_update_ms: int
    start_ms: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0


def grouped(partitions) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """(topic, index) pairs as the record keeps them: per topic, sorted."""
    topics: dict[str, set[int]] = {}
    for topic, index in partitions:
        topics.setdefault(topic, set()).add(index)
    return tuple((t, tuple(sorted(topics[t]))) for t in sorted(topics))


def _uvarint(value: int, out: bytearray) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def key(transactional_id: str) -> bytes:
    data = transactional_id.encode()
    return _I16.pack(KEY_VERSION) + _I16.pack(len(data)) + data


def value(r: TxnRecord, version: int = VALUE_VERSION) -> bytes:
    out = bytearray(_I16.pack(version))
    out += _I64.pack(r.producer_id) + _I16.pack(r.producer_epoch) + _I32.pack(r.timeout_ms) + _I8.pack(r.state.byte)
    flexible = version >= 1
    partitions = None if r.state is TxnState.EMPTY else r.partitions
    if partitions is None:
        out += b"\x00" if flexible else _I32.pack(-1)
    else:
        if flexible:
            _uvarint(len(partitions) + 1, out)
        else:
            out += _I32.pack(len(partitions))
        for topic, indexes in partitions:
            name = topic.encode()
            if flexible:
                _uvarint(len(name) + 1, out)
                out += name
                _uvarint(len(indexes) + 1, out)
            else:
                out += _I16.pack(len(name)) + name + _I32.pack(len(indexes))
            for index in indexes:
                out += _I32.pack(index)
            if flexible:
                out.append(0)  # the topic's tagged fields: none
    out += _I64.pack(r.last_update_ms) + _I64.pack(r.start_ms)
    if flexible:
        tagged = []
        if r.previous_producer_id != NO_PRODUCER_ID:
            tagged.append((_TAG_PREVIOUS, _I64.pack(r.previous_producer_id)))
        if r.next_producer_id != NO_PRODUCER_ID:
            tagged.append((_TAG_NEXT, _I64.pack(r.next_producer_id)))
        if r.client_transaction_version != 0:
            tagged.append((_TAG_CLIENT_VERSION, _I16.pack(r.client_transaction_version)))
        _uvarint(len(tagged), out)
        for tag, data in tagged:
            _uvarint(tag, out)
            _uvarint(len(data), out)
            out += data
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def fixed(self, codec: struct.Struct) -> int:
        if self.pos + codec.size > len(self.data):
            raise BadRecord("record ends early")
        (v,) = codec.unpack_from(self.data, self.pos)
        self.pos += codec.size
        return v

    def uvarint(self) -> int:
        result = shift = 0
        while True:
            if self.pos >= len(self.data) or shift > 28:
                raise BadRecord("bad unsigned varint")
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise BadRecord("length runs past the record")
        v = self.data[self.pos:self.pos + n]
        self.pos += n
        return bytes(v)

    def string(self, flexible: bool) -> str:
        n = self.uvarint() - 1 if flexible else self.fixed(_I16)
        try:
            return self.raw(n).decode()
        except UnicodeDecodeError as exc:
            raise BadRecord(f"string is not UTF-8: {exc}") from None

    def count(self, flexible: bool) -> int:
        """An array's length; -1 for null."""
        n = self.uvarint() - 1 if flexible else self.fixed(_I32)
        if n > len(self.data):
            raise BadRecord(f"array of {n} in a record of {len(self.data)} bytes")
        return n

    def tagged(self) -> dict[int, bytes]:
        return {self.uvarint(): self.raw(self.uvarint()) for _ in range(self.uvarint())}


def decode_key(data: bytes) -> str:
    r = _Reader(data)
    version = r.fixed(_I16)
    if version != KEY_VERSION:
        raise BadRecord(f"unknown key version {version}")
    return r.string(flexible=False)


def decode_value(data: bytes) -> TxnRecord:
    r = _Reader(data)
    version = r.fixed(_I16)
    if version not in (0, 1):
        raise BadRecord(f"unknown value version {version}")
    flexible = version == 1
    producer_id, epoch, timeout, state_byte = r.fixed(_I64), r.fixed(_I16), r.fixed(_I32), r.fixed(_I8)
    try:
        state = TxnState.from_byte(state_byte)
    except ValueError as exc:
        raise BadRecord(str(exc)) from None
    topics = []
    for _ in range(max(0, r.count(flexible))):
        topic = r.string(flexible)
        indexes = tuple(r.fixed(_I32) for _ in range(max(0, r.count(flexible))))
        if flexible:
            r.tagged()
        topics.append((topic, indexes))
    last_update, start = r.fixed(_I64), r.fixed(_I64)
    tags = r.tagged() if flexible else {}
    try:
        previous = _I64.unpack(tags[_TAG_PREVIOUS])[0] if _TAG_PREVIOUS in tags else NO_PRODUCER_ID
        nxt = _I64.unpack(tags[_TAG_NEXT])[0] if _TAG_NEXT in tags else NO_PRODUCER_ID
        client_version = _I16.unpack(tags[_TAG_CLIENT_VERSION])[0] if _TAG_CLIENT_VERSION in tags else 0
    except struct.error as exc:
        raise BadRecord(f"tagged field of the wrong size: {exc}") from None
    return TxnRecord(producer_id, epoch, timeout, state, grouped((t, i) for t, ixs in topics for i in ixs),
                     last_update, start, previous, nxt, client_version)
