"""Consumer groups as records of `__consumer_offsets`, in Kafka's own record types.

A key is int16 type | string group_id (| string member_id), non-flexible (string = int16
length + UTF-8); the type is the key's version, after the classic ones (0-1 offset commit,
2 classic group). A value is int16 version=0, then a flexible body: compact string =
uvarint(length + 1) + UTF-8 (0: null), compact array = uvarint(count + 1) (0: null), uuid = 16
bytes, and after every struct a tagged-field section (uvarint count, then tag | size | bytes
per field; written empty, skipped when read). A null value (tombstone) deletes the key.

    type 3 ConsumerGroupMetadata      key group              value int32 epoch
    type 4 ConsumerGroupPartitionMetadata  key group         value [topic_id uuid | name string
                                                                    | partitions int32 | [] racks]
    type 5 ConsumerGroupMemberMetadata key group | member   value instance_id? | rack_id? | client_id
                                                                  | client_host | [] topic names | regex?
                                                                  | rebalance_timeout int32 | assignor?
                                                                  | tag 0: classic member metadata
                                                                    [session_timeout int32 | []
                                                                     (name string | metadata bytes)]
    type 6 ConsumerGroupTargetAssignmentMetadata key group   value int32 assignment_epoch
    type 7 ConsumerGroupTargetAssignmentMember key group | member  value [topic_id | [] int32]
    type 8 ConsumerGroupCurrentMemberAssignment key group | member value int32 epoch
                                                                  | int32 previous_epoch | int8 state
                                                                  | [topic_id | [] int32] assigned
                                                                  | [topic_id | [] int32] pending revocation

Kafka writes them in this order for one change (member first, then the group epoch, then the
target, then each member's current assignment), and a replay applies them in log order.
"""

from __future__ import annotations

import struct
import uuid
from typing import Callable

from broker.groups.offsets_log import BadRecord
from broker.groups.consumer import topic_partitions as tp
from broker.groups.consumer.consumer_group import ClassicMetadata, MemberMetadata, SubscribedTopic
from broker.groups.consumer.reconciliation import CurrentAssignment, MemberState
from broker.groups.consumer.topic_partitions import Assignment

GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = 6, 7, 8
MEMBER_KEYED = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
TYPES = frozenset({GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER,
                   CURRENT_ASSIGNMENT})
VALUE_VERSION = 0
CLASSIC_MEMBER_TAG = 0  # ConsumerGroupMemberMetadataValue.ClassicMemberMetadata

_I8, _I16, _I32 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i")


# --- keys ------------------------------------------------------------------------------------

def key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    out = bytearray(_I16.pack(record_type))
    for s in (group_id,) if member_id is None else (group_id, member_id):
        data = s.encode()
        out += _I16.pack(len(data)) + data
    return bytes(out)


def key_type(raw: bytes) -> int:
    if len(raw) < 2:
        raise BadRecord("key ends early")
    return _I16.unpack_from(raw)[0]


def decode_key(raw: bytes) -> tuple[int, str, str | None]:
    """(type, group id, member id or None)."""
    r = _Reader(raw)
    record_type = r.i16()
    if record_type not in TYPES:
        raise BadRecord(f"not a consumer group record type: {record_type}")
    group_id = r.short_string()
    member_id = r.short_string() if record_type in MEMBER_KEYED else None
    return record_type, group_id, member_id


# --- values ----------------------------------------------------------------------------------

def epoch_value(epoch: int) -> bytes:
    """ConsumerGroupMetadata (the group epoch) and TargetAssignmentMetadata (the assignment's)."""
    return bytes(_Writer().i32(epoch).tags().out)


def partition_metadata_value(topics: list[SubscribedTopic]) -> bytes:
    w = _Writer()
    w.array(sorted(topics, key=lambda t: t.name),
            lambda t: w.uuid(t.topic_id).string(t.name).i32(t.partitions).array([], None).tags())
    return bytes(w.tags().out)


def member_metadata_value(m: MemberMetadata) -> bytes:
    w = _Writer().string(m.instance_id).string(m.rack_id).string(m.client_id).string(m.client_host)
    w.array(list(m.subscribed_topic_names), w.string)
    w.string(m.subscribed_topic_regex).i32(m.rebalance_timeout_ms).string(m.server_assignor)
    if m.classic is None:
        return bytes(w.tags().out)
    c = _Writer(versioned=False).i32(m.classic.session_timeout_ms)
    c.array(list(m.classic.protocols), lambda p: c.string(p[0]).bytes(p[1]).tags())
    return bytes(w.tags({CLASSIC_MEMBER_TAG: bytes(c.tags().out)}).out)


def target_member_value(assignment: Assignment) -> bytes:
    return bytes(_Writer().partitions(assignment).tags().out)


def current_assignment_value(c: CurrentAssignment) -> bytes:
    w = _Writer().i32(c.epoch).i32(c.previous_epoch).i8(int(c.state))
    return bytes(w.partitions(c.assigned).partitions(c.pending_revocation).tags().out)


def decode_epoch(raw: bytes) -> int:
    r = _Reader(raw, versioned=True)
    epoch = r.i32()
    r.tags()
    return epoch


def decode_partition_metadata(raw: bytes) -> list[SubscribedTopic]:
    r = _Reader(raw, versioned=True)

    def topic() -> SubscribedTopic:
        t = SubscribedTopic(r.uuid(), r.string() or "", r.i32())
        r.array(lambda: (r.i32(), r.array(r.string), r.tags()))  # per-partition racks: unused here
        r.tags()
        return t

    topics = r.array(topic)
    r.tags()
    return topics


def decode_member_metadata(raw: bytes) -> MemberMetadata:
    r = _Reader(raw, versioned=True)
    instance_id, rack_id, client_id, client_host = r.string(), r.string(), r.string() or "", r.string() or ""
    names = tuple(r.array(r.string))
    regex, rebalance_timeout, assignor = r.string(), r.i32(), r.string()
    classic = r.tags().get(CLASSIC_MEMBER_TAG)
    if classic is not None:
        c = _Reader(classic)
        session_timeout = c.i32()
        protocols = tuple(c.array(lambda: (c.string() or "", c.bytes(), c.tags())[:2]))
        c.tags()
        classic = ClassicMetadata(session_timeout, protocols)
    return MemberMetadata(instance_id, rack_id, client_id, client_host, names, regex, rebalance_timeout, assignor,
                          classic)


def decode_target_member(raw: bytes) -> Assignment:
    r = _Reader(raw, versioned=True)
    assignment = r.partitions()
    r.tags()
    return assignment


def decode_current_assignment(raw: bytes) -> CurrentAssignment:
    r = _Reader(raw, versioned=True)
    epoch, previous, state = r.i32(), r.i32(), MemberState.from_byte(r.i8())
    c = CurrentAssignment(state, epoch, previous, r.partitions(), r.partitions())
    r.tags()
    return c


# --- the flexible encoding -------------------------------------------------------------------

class _Writer:
    def __init__(self, versioned: bool = True) -> None:
        self.out = bytearray(_I16.pack(VALUE_VERSION) if versioned else b"")

    def i8(self, v: int) -> _Writer:
        self.out += _I8.pack(v)
        return self

    def i32(self, v: int) -> _Writer:
        self.out += _I32.pack(v)
        return self

    def uvarint(self, v: int) -> _Writer:
        while v >= 0x80:
            self.out.append((v & 0x7F) | 0x80)
            v >>= 7
        self.out.append(v)
        return self

    def string(self, v: str | None) -> _Writer:
        if v is None:
            return self.uvarint(0)
        data = v.encode()
        self.uvarint(len(data) + 1)
        self.out += data
        return self

    def bytes(self, v: bytes) -> _Writer:
        self.uvarint(len(v) + 1)
        self.out += v
        return self

    def uuid(self, v: uuid.UUID) -> _Writer:
        self.out += v.bytes
        return self

    def array(self, items: list, write_one: Callable | None) -> _Writer:
        self.uvarint(len(items) + 1)
        for item in items:
            write_one(item)
        return self

    def partitions(self, a: Assignment) -> _Writer:
        topics = sorted(tp.normal(a).items(), key=lambda kv: str(kv[0]))
        return self.array(topics, lambda kv: self.uuid(kv[0]).array(sorted(kv[1]), self.i32).tags())

    def tags(self, fields: dict[int, bytes] | None = None) -> _Writer:
        self.uvarint(len(fields or {}))
        for tag, data in sorted((fields or {}).items()):
            self.uvarint(tag).uvarint(len(data))
            self.out += data
        return self


class _Reader:
    def __init__(self, data: bytes, versioned: bool = False) -> None:
        self.data, self.pos = data, 0
        if versioned and self.i16() != VALUE_VERSION:
            raise BadRecord("consumer group value version is not one this broker reads")

    def _take(self, codec: struct.Struct) -> int:
        if self.pos + codec.size > len(self.data):
            raise BadRecord("record ends early")
        (v,) = codec.unpack_from(self.data, self.pos)
        self.pos += codec.size
        return v

    def i8(self) -> int:
        return self._take(_I8)

    def i16(self) -> int:
        return self._take(_I16)

    def i32(self) -> int:
        return self._take(_I32)

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            if self.pos >= len(self.data) or shift > 28:
                raise BadRecord("bad unsigned varint")
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def _raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise BadRecord("length runs past the record")
        v = self.data[self.pos:self.pos + n]
        self.pos += n
        return bytes(v)

    def _text(self, n: int) -> str:
        try:
            return self._raw(n).decode()
        except UnicodeDecodeError as exc:
            raise BadRecord(f"string is not UTF-8: {exc}") from None

    def short_string(self) -> str:
        return self._text(self.i16())

    def string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self._text(n - 1)

    def bytes(self) -> bytes:
        n = self.uvarint()
        if n == 0:
            raise BadRecord("null bytes where bytes are required")
        return self._raw(n - 1)

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self._raw(16))

    def array(self, read_one: Callable) -> list:
        n = self.uvarint()
        if n - 1 > len(self.data) - self.pos:
            raise BadRecord(f"array count {n - 1} runs past the record")
        return [read_one() for _ in range(n - 1)]

    def partitions(self) -> dict[uuid.UUID, frozenset[int]]:
        def topic() -> tuple[uuid.UUID, frozenset[int]]:
            pair = self.uuid(), frozenset(self.array(self.i32))
            self.tags()
            return pair

        return tp.normal(dict(self.array(topic)))

    def tags(self) -> dict[int, bytes]:
        """The tagged fields, by tag (those this broker does not know are skipped by callers)."""
        fields = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            fields[tag] = self._raw(self.uvarint())
        return fields
