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

import uuid

from wire.field_codec import FieldReader, FieldWriter

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

# --- keys ------------------------------------------------------------------------------------

def key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    w = FieldWriter().i16(record_type).nullable_string(group_id)
    return (w if member_id is None else w.nullable_string(member_id)).value()


def key_type(raw: bytes) -> int:
    return FieldReader(raw, BadRecord).i16()


def decode_key(raw: bytes) -> tuple[int, str, str | None]:
    """(type, group id, member id or None)."""
    r = FieldReader(raw, BadRecord)
    record_type = r.i16()
    if record_type not in TYPES:
        raise BadRecord(f"not a consumer group record type: {record_type}")
    group_id = r.string()
    member_id = r.string() if record_type in MEMBER_KEYED else None
    return record_type, group_id, member_id


# --- values ----------------------------------------------------------------------------------

def epoch_value(epoch: int) -> bytes:
    """ConsumerGroupMetadata (the group epoch) and TargetAssignmentMetadata (the assignment's)."""
    return _writer().i32(epoch).tagged_fields().value()


def partition_metadata_value(topics: list[SubscribedTopic]) -> bytes:
    w = _writer()
    w.array(sorted(topics, key=lambda t: t.name),
            lambda t: w.uuid(t.topic_id).compact_nullable_string(t.name).i32(t.partitions).count(0, True)
            .tagged_fields(), True)
    return w.tagged_fields().value()


def member_metadata_value(m: MemberMetadata) -> bytes:
    w = _writer().compact_nullable_string(m.instance_id).compact_nullable_string(m.rack_id)
    w.compact_nullable_string(m.client_id).compact_nullable_string(m.client_host)
    w.array(list(m.subscribed_topic_names), w.compact_nullable_string, True)
    w.compact_nullable_string(m.subscribed_topic_regex).i32(m.rebalance_timeout_ms)
    w.compact_nullable_string(m.server_assignor)
    if m.classic is None:
        return w.tagged_fields().value()
    c = FieldWriter().i32(m.classic.session_timeout_ms)
    c.array(list(m.classic.protocols), lambda p: c.compact_nullable_string(p[0]).compact_bytes(p[1]).tagged_fields(),
            True)
    return w.tagged_fields({CLASSIC_MEMBER_TAG: c.tagged_fields().value()}).value()


def target_member_value(assignment: Assignment) -> bytes:
    return write_partitions(_writer(), assignment).tagged_fields().value()


def current_assignment_value(c: CurrentAssignment) -> bytes:
    w = _writer().i32(c.epoch).i32(c.previous_epoch).i8(int(c.state))
    write_partitions(write_partitions(w, c.assigned), c.pending_revocation)
    return w.tagged_fields().value()


def decode_epoch(raw: bytes) -> int:
    r = _reader(raw)
    epoch = r.i32()
    r.tagged_fields()
    return epoch


def decode_partition_metadata(raw: bytes) -> list[SubscribedTopic]:
    r = _reader(raw)

    def topic() -> SubscribedTopic:
        t = SubscribedTopic(r.uuid(), r.compact_nullable_string() or "", r.i32())
        r.array(lambda: (r.i32(), r.array(r.compact_nullable_string, True), r.tagged_fields()),
                True)  # per-partition racks: unused here
        r.tagged_fields()
        return t

    topics = r.array(topic, True)
    r.tagged_fields()
    return topics


def decode_member_metadata(raw: bytes) -> MemberMetadata:
    r = _reader(raw)
    text = r.compact_nullable_string
    instance_id, rack_id, client_id, client_host = text(), text(), text() or "", text() or ""
    names = tuple(r.array(text, True))
    regex, rebalance_timeout, assignor = text(), r.i32(), text()
    classic = r.tagged_fields().get(CLASSIC_MEMBER_TAG)
    if classic is not None:
        c = FieldReader(classic, BadRecord)
        session_timeout = c.i32()
        protocols = tuple(c.array(lambda: (c.compact_nullable_string() or "", c.compact_bytes(),
                                           c.tagged_fields())[:2], True))
        c.tagged_fields()
        classic = ClassicMetadata(session_timeout, protocols)
    return MemberMetadata(instance_id, rack_id, client_id, client_host, names, regex, rebalance_timeout, assignor,
                          classic)


def decode_target_member(raw: bytes) -> Assignment:
    r = _reader(raw)
    assignment = read_partitions(r)
    r.tagged_fields()
    return assignment


def decode_current_assignment(raw: bytes) -> CurrentAssignment:
    r = _reader(raw)
    epoch, previous, state = r.i32(), r.i32(), MemberState.from_byte(r.i8())
    c = CurrentAssignment(state, epoch, previous, read_partitions(r), read_partitions(r))
    r.tagged_fields()
    return c


# --- the flexible encoding (topic-partition lists: the share group records use them too) ---------

def _writer() -> FieldWriter:
    return FieldWriter().i16(VALUE_VERSION)


def _reader(raw: bytes) -> FieldReader:
    r = FieldReader(raw, BadRecord)
    if r.i16() != VALUE_VERSION:
        raise BadRecord("consumer group value version is not one this broker reads")
    return r


def write_partitions(w: FieldWriter, a: Assignment) -> FieldWriter:
    topics = sorted(tp.normal(a).items(), key=lambda kv: str(kv[0]))
    return w.array(topics, lambda kv: w.uuid(kv[0]).array(sorted(kv[1]), w.i32, True).tagged_fields(), True)


def read_partitions(r: FieldReader) -> Assignment:
    def topic() -> tuple[uuid.UUID, frozenset[int]]:
        pair = r.uuid(), frozenset(r.array(r.i32, True))
        r.tagged_fields()
        return pair

    return tp.normal(dict(r.array(topic, True)))
