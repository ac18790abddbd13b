"""Share-partition state as records of the internal compacted topic `__share_group_state`.

One record per write, keyed by (group id, topic id, partition), its value the whole state of
that share-partition (Kafka's share coordinator writes a ShareSnapshot, then ShareUpdate deltas
between snapshots; here every write is a snapshot, and compaction keeps the last per key).
Big-endian, string = int16 length + UTF-8, in the shape of Kafka's ShareSnapshotKey / Value:

    key    int16 record type = 0 (snapshot)
           string group id | uuid topic id (16 bytes) | int32 partition
    value  int16 version = 0
           int32 snapshot epoch | int32 state epoch | int32 leader epoch | int64 start offset
           int64 create timestamp | int64 write timestamp
           uvarint batches + 1, then per batch:
              int64 first offset | int64 last offset | int8 delivery state | int16 delivery count
              | uvarint 0 (no tagged fields)
           uvarint 0 (no tagged fields)
    a null value (tombstone) deletes the key.

Delivery states are Kafka's: 0 AVAILABLE (delivered before, its lock ended), 2 ACKNOWLEDGED,
4 ARCHIVED; offsets at or past the start offset that no batch names were never delivered.

The key's partition of the topic is Kafka's: `abs(java_hash("group:topicId:partition")) %
partitions`, the topic id in Kafka's text form (URL-safe base64, no padding).

After a crash: the records are appended with acks=-1 through the normal engine, whose recovery
cuts a torn tail; a write is answered only once every in-sync replica has its record, so the
leader that replays the partition (the last value per key wins) finds every state it was told
was stored, or a later one.
"""

from __future__ import annotations

import base64
import uuid
from typing import NamedTuple

from wire.field_codec import FieldReader, FieldWriter

from broker.coordinator.partition_hash import partition_for as java_hash_partition
from broker.groups.share.share_partition import RecordState, StateRange

TOPIC = "__share_group_state"
SNAPSHOT_RECORD_TYPE = 0
VALUE_VERSION = 0
STORED_STATES = frozenset({RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})

Key = tuple[str, uuid.UUID, int]  # group id, topic id, partition


class BadRecord(ValueError):
    """A __share_group_state record this broker cannot read (skipped with a log line)."""


class ShareState(NamedTuple):
    """What the share coordinator keeps of one share-partition."""
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateRange, ...]
    snapshot_epoch: int = 0
    create_ms: int = 0
    write_ms: int = 0


class StateSummary(NamedTuple):
    """What ReadShareGroupStateSummary answers of a share-partition (start offset -1: no state)."""
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int  # records in the window past the start that are done with; -1: no state


def summary_of(state: ShareState) -> StateSummary:
    """The summary of a kept state: done-with records are those of ACKNOWLEDGED or ARCHIVED batches
    (every batch lies at or past the start, overlay() clips them), KIP-1226's DeliveryCompleteCount."""
    if state.start_offset < 0:
        return StateSummary(state.state_epoch, state.leader_epoch, state.start_offset, -1)
    done = sum(b.last - b.first + 1 for b in state.batches if b.state is not RecordState.AVAILABLE)
    return StateSummary(state.state_epoch, state.leader_epoch, state.start_offset, done)


def kafka_uuid(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def coordinator_key(key: Key) -> str:
    """The FindCoordinator key (type 2, share) of a share-partition."""
    group_id, topic_id, partition = key
    return f"{group_id}:{kafka_uuid(topic_id)}:{partition}"


def is_coordinator_key(text: str) -> bool:
    """Whether `text` reads as a coordinator key: a group id, a topic id, a partition of at least 0."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[2].isdigit():
        return False
    try:
        return len(base64.urlsafe_b64decode(parts[1] + "==")) == 16
    except ValueError:
        return False


def partition_for(coordinator_key_text: str, partitions: int) -> int:
    """The topic's partition of a coordinator key (share_state.coordinator_key)."""
    return java_hash_partition(coordinator_key_text, partitions)


def encode_key(key: Key) -> bytes:
    group_id, topic_id, partition = key
    return FieldWriter().i16(SNAPSHOT_RECORD_TYPE).nullable_string(group_id).uuid(topic_id).i32(partition).value()


def decode_key(data: bytes) -> Key:
    r = FieldReader(data, BadRecord)
    kind = r.i16()
    if kind != SNAPSHOT_RECORD_TYPE:
        raise BadRecord(f"record type {kind}, not a share snapshot")
    group_id = r.string()
    topic_id, partition = r.uuid(), r.i32()
    if r.pos != len(data):
        raise BadRecord(f"{len(data) - r.pos} bytes past the key")
    return group_id, topic_id, partition


def encode_value(state: ShareState) -> bytes:
    w = FieldWriter().i16(VALUE_VERSION).i32(state.snapshot_epoch).i32(state.state_epoch).i32(state.leader_epoch)
    w.i64(state.start_offset).i64(state.create_ms).i64(state.write_ms).uvarint(len(state.batches) + 1)
    for b in state.batches:
        w.i64(b.first).i64(b.last).i8(int(b.state)).i16(b.delivery_count).uvarint(0)
    return w.uvarint(0).value()


def decode_value(data: bytes) -> ShareState:
    r = FieldReader(data, BadRecord)
    version = r.i16()
    if version != VALUE_VERSION:
        raise BadRecord(f"value version {version}")
    snapshot_epoch, state_epoch, leader_epoch = r.i32(), r.i32(), r.i32()
    start, create_ms, write_ms = r.i64(), r.i64(), r.i64()
    count = r.uvarint() - 1
    if count < 0 or count > (len(data) - r.pos) // 20:
        raise BadRecord(f"{count} batches in {len(data) - r.pos} bytes")
    batches = []
    for _ in range(count):
        first, last, state, delivered = r.i64(), r.i64(), r.i8(), r.i16()
        if r.uvarint() != 0:
            raise BadRecord("a state batch with tagged fields")
        if state not in STORED_STATES or last < first:
            raise BadRecord(f"state batch {first}..{last} in state {state}")
        batches.append(StateRange(first, last, RecordState(state), delivered))
    if r.uvarint() != 0 or r.pos != len(data):
        raise BadRecord("bytes past the value")
    return ShareState(state_epoch, leader_epoch, start, tuple(batches), snapshot_epoch, create_ms, write_ms)


def overlay(kept: tuple[StateRange, ...], written: tuple[StateRange, ...], start: int) -> tuple[StateRange, ...]:
    """The batches after a write (Kafka's PersisterStateBatchCombiner): each written batch wins
    where it overlaps what is kept or was written before it, and nothing lies below the start."""
    pieces = list(kept)
    for w in written:
        pieces = [q for p in pieces for q in (p._replace(last=min(p.last, w.first - 1)),
                                             p._replace(first=max(p.first, w.last + 1))) if q.first <= q.last]
        pieces.append(w)
    clipped = sorted((p._replace(first=max(p.first, start)) for p in pieces if p.last >= start),
                     key=lambda p: p.first)
    merged: list[StateRange] = []
    for p in clipped:
        last = merged[-1] if merged else None
        if last and last.last + 1 == p.first and (last.state, last.delivery_count) == (p.state, p.delivery_count):
            merged[-1] = last._replace(last=p.last)
        else:
            merged.append(p)
    return tuple(merged)
