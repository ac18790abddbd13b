"""Share groups as records of `__consumer_offsets`, in Kafka's record types (KIP-932).

A key is int16 type | string group_id, non-flexible (string = int16 length + UTF-8), as the
consumer group records' (consumer/records.py). A value is int16 version=0, then a flexible body
(compact arrays and strings, uuid = 16 bytes, a tagged-field section after every struct: written
empty, skipped when read). A null value (tombstone) deletes the key.

    type 11 ShareGroupMetadata               key group   value int32 epoch | int64 metadata hash
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
Members are not written: they rejoin under their own ids after a restart.
"""

from __future__ import annotations

import uuid

from wire.field_codec import FieldReader, FieldWriter

from broker.groups.offsets_log import BadRecord

GROUP_METADATA, STATE_PARTITION_METADATA = 11, 15
TYPES = frozenset({GROUP_METADATA, STATE_PARTITION_METADATA})
VALUE_VERSION = 0
NO_METADATA_HASH = 0  # Kafka's hash of the subscribed topics' metadata: not used here

StatePartitions = dict[uuid.UUID, tuple[str, frozenset[int]]]  # topic id -> (name, partitions)


def key(record_type: int, group_id: str) -> bytes:
    return FieldWriter().i16(record_type).nullable_string(group_id).value()


def key_type(raw: bytes) -> int:
    return FieldReader(raw, BadRecord).i16()


def decode_key(raw: bytes) -> tuple[int, str]:
    r = FieldReader(raw, BadRecord)
    record_type = r.i16()
    if record_type not in TYPES:
        raise BadRecord(f"not a share group record type: {record_type}")
    return record_type, r.string()


def group_metadata_value(epoch: int) -> bytes:
    return _writer().i32(epoch).i64(NO_METADATA_HASH).tagged_fields().value()


def decode_group_metadata(raw: bytes) -> int:
    """The group epoch."""
    r = _reader(raw)
    epoch = r.i32()
    r.i64()
    r.tagged_fields()
    return epoch


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
