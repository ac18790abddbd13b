"""Share groups as records of `__consumer_offsets`, in Kafka's record types (KIP-932).

A key is int16 type | string group_id (| string member_id), non-flexible (string = int16 length +
UTF-8), as the consumer group records' (consumer/records.py, whose key and topic-partition list
encodings these use). A value is int16 version=0, then a flexible body (compact arrays and
strings, uuid = 16 bytes, a tagged-field section after every struct: written empty, skipped when
read). A null value (tombstone) deletes the key.

    type 10 ShareGroupMemberMetadata         key group | member  value rack_id? | client_id | client_host
                                                                       | [] subscribed topic names
    type 11 ShareGroupMetadata               key group   value int32 epoch | int64 metadata hash
    type 12 ShareGroupTargetAssignmentMetadata key group value int32 assignment epoch
    type 13 ShareGroupTargetAssignmentMember key group | member  value [topic_id uuid | [] int32]
    type 14 ShareGroupCurrentMemberAssignment key group | member value int32 epoch | int32 previous epoch
                                                                       | int8 state (0: stable, always)
                                                                       | [topic_id uuid | [] int32]
    type 15 ShareGroupStatePartitionMetadata key group   value [] initializing topics
                                                               | [] initialized topics
                                                               | [] deleting (topic_id uuid | name string)
        a topics entry: topic_id uuid | name string | [] int32 partitions | int64 create timestamp

The metadata record says the group exists (and its epoch) while no member is live: a restart or a
coordinator move replays it (share_group_replay.py), so an idle group is still listed, described
and deletable. Each record holds the whole of what it says (not a delta), so a later write mends
an earlier failed one, and a crash between two leaves the last one whole.

Kafka's group coordinator initializes a share-partition's state itself before assigning it and
records it as initializing, then initialized. Here the share-partition's leader initializes it at
first use (share_partitions.py), so the group coordinator cannot know when that is done: every
share-partition it has assigned (or an admin altered) is written as initialized — "may have state"
— and the admin asks the share coordinator about these only. Kafka's initializing topics are
read as initialized; deleting topics are never written (a delete finishes before it is answered).

The metadata hash is Kafka's field with this broker's own function of the subscribed topics (name,
id, partition count; share_group.py): only this broker reads it back, to tell at a member's first
heartbeat after a restart or a coordinator move whether the topics changed meanwhile. Which of
these records a change writes is share_group_changes.py's; the replay is share_group_replay.py.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from wire.field_codec import FieldReader, FieldWriter

from broker.groups.offsets_log import BadRecord
from broker.groups.consumer import records as consumer_records
from broker.groups.share.simple_assignor import Assignment

MEMBER_METADATA, GROUP_METADATA, TARGET_METADATA = 10, 11, 12
TARGET_MEMBER, CURRENT_ASSIGNMENT, STATE_PARTITION_METADATA = 13, 14, 15
MEMBER_KEYED = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
TYPES = frozenset(range(MEMBER_METADATA, STATE_PARTITION_METADATA + 1))
VALUE_VERSION = 0
STABLE = 0  # Kafka's MemberState.STABLE: a share member has no revocation step, so no other state

StatePartitions = dict[uuid.UUID, tuple[str, frozenset[int]]]  # topic id -> (name, partitions)


@dataclass(frozen=True)
class MemberMetadata:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed: tuple[str, ...]


def key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    return consumer_records.key(record_type, group_id, member_id)


def key_type(raw: bytes) -> int:
    return FieldReader(raw, BadRecord).i16()


def decode_key(raw: bytes) -> tuple[int, str, str | None]:
    """(type, group id, member id or None)."""
    r = FieldReader(raw, BadRecord)
    record_type = r.i16()
    if record_type not in TYPES:
        raise BadRecord(f"not a share group record type: {record_type}")
    group_id = r.string()
    return record_type, group_id, r.string() if record_type in MEMBER_KEYED else None


def member_metadata_value(m: MemberMetadata) -> bytes:
    w = _writer().compact_nullable_string(m.rack_id).compact_nullable_string(m.client_id)
    w.compact_nullable_string(m.client_host)
    return w.array(list(m.subscribed), w.compact_nullable_string, True).tagged_fields().value()


def decode_member_metadata(raw: bytes) -> MemberMetadata:
    r = _reader(raw)
    text = r.compact_nullable_string
    rack_id, client_id, client_host = text(), text() or "", text() or ""
    m = MemberMetadata(rack_id, client_id, client_host, tuple(r.array(lambda: text() or "", True)))
    r.tagged_fields()
    return m


def group_metadata_value(epoch: int, metadata_hash: int) -> bytes:
    return _writer().i32(epoch).i64(metadata_hash).tagged_fields().value()


def decode_group_metadata(raw: bytes) -> tuple[int, int]:
    """(the group epoch, the metadata hash)."""
    r = _reader(raw)
    epoch, metadata_hash = r.i32(), r.i64()
    r.tagged_fields()
    return epoch, metadata_hash


# ShareGroupTargetAssignmentMetadata and ...Member: the consumer groups' layouts (types 6 and 7).
target_metadata_value, decode_target_metadata = consumer_records.epoch_value, consumer_records.decode_epoch
target_member_value, decode_target_member = consumer_records.target_member_value, consumer_records.decode_target_member


def current_assignment_value(epoch: int, previous_epoch: int, assigned: Assignment) -> bytes:
    w = _writer().i32(epoch).i32(previous_epoch).i8(STABLE)
    return consumer_records.write_partitions(w, assigned).tagged_fields().value()


def decode_current_assignment(raw: bytes) -> tuple[int, int, Assignment]:
    """(the member epoch, the previous member epoch, the assigned partitions)."""
    r = _reader(raw)
    epoch, previous, _state = r.i32(), r.i32(), r.i8()
    assigned = consumer_records.read_partitions(r)
    r.tagged_fields()
    return epoch, previous, assigned


def state_partitions_value(initialized: StatePartitions, now_ms: int) -> bytes:
    w = _writer().count(0, True)  # initializing: none (see the module's docstring)
    topics = sorted(initialized.items(), key=lambda kv: kv[1][0])
    w.array(topics, lambda kv: w.uuid(kv[0]).compact_nullable_string(kv[1][0])
            .array(sorted(kv[1][1]), w.i32, True).i64(now_ms).tagged_fields(), True)
    return w.count(0, True).tagged_fields().value()  # deleting: none


def decode_state_partitions(raw: bytes) -> StatePartitions:
    """Initializing and initialized topics together: the share-partitions that may have state."""
    r = _reader(raw)

    def topic_partitions() -> tuple[uuid.UUID, str, list[int]]:
        entry = r.uuid(), r.compact_nullable_string() or "", r.array(r.i32, True)
        r.i64()
        r.tagged_fields()
        return entry

    def topic_info() -> None:
        r.uuid(), r.compact_nullable_string(), r.tagged_fields()

    found: StatePartitions = {}
    for topic_id, name, partitions in r.array(topic_partitions, True) + r.array(topic_partitions, True):
        _name, kept = found.get(topic_id, (name, frozenset()))
        found[topic_id] = (name, kept | frozenset(partitions))
    r.array(topic_info, True)
    r.tagged_fields()
    return found


def _writer() -> FieldWriter:
    return FieldWriter().i16(VALUE_VERSION)


def _reader(raw: bytes) -> FieldReader:
    r = FieldReader(raw, BadRecord)
    if r.i16() != VALUE_VERSION:
        raise BadRecord("share group value version is not one this broker reads")
    return r
