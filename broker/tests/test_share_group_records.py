"""Share groups' records of `__consumer_offsets` (share_group_records.py): Kafka's byte layouts
of ShareGroupMetadata (type 11) and ShareGroupStatePartitionMetadata (type 15)."""

from __future__ import annotations

import uuid

import pytest

from broker.groups.offsets_log import BadRecord
from broker.groups.share import share_group_records as rec

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def test_keys_are_the_type_then_the_group_id():
    assert rec.key(rec.GROUP_METADATA, "g") == b"\x00\x0b\x00\x01g"
    assert rec.decode_key(rec.key(rec.STATE_PARTITION_METADATA, "g")) == (rec.STATE_PARTITION_METADATA, "g")
    with pytest.raises(BadRecord):
        rec.decode_key(b"\x00\x03\x00\x01g")  # a consumer group's record


def test_group_metadata_holds_the_epoch_and_kafkas_metadata_hash():
    raw = rec.group_metadata_value(7)
    assert raw == b"\x00\x00" + (7).to_bytes(4, "big") + bytes(8) + b"\x00"
    assert rec.decode_group_metadata(raw) == 7


def test_state_partitions_round_trip_as_initialized_topics():
    written = {T1: ("t1", frozenset({0, 2})), T2: ("t2", frozenset({1}))}
    raw = rec.state_partitions_value(written, now_ms=123)
    assert raw[:3] == b"\x00\x00\x01"  # version 0, no initializing topics
    assert raw[-2:] == b"\x01\x00"  # no deleting topics, no tagged fields
    assert rec.decode_state_partitions(raw) == written
    assert rec.decode_state_partitions(rec.state_partitions_value({}, 0)) == {}


def test_kafkas_initializing_topics_read_as_may_have_state():
    w = rec._writer()
    entry = (lambda tid, name, parts: w.uuid(tid).compact_nullable_string(name).array(parts, w.i32, True)
             .i64(0).tagged_fields())
    w.array([(T1, "t1", [0])], lambda e: entry(*e), True)  # initializing
    w.array([(T1, "t1", [1])], lambda e: entry(*e), True)  # initialized
    w.array([(T2, "t2")], lambda e: w.uuid(e[0]).compact_nullable_string(e[1]).tagged_fields(), True)
    assert rec.decode_state_partitions(w.tagged_fields().value()) == {T1: ("t1", frozenset({0, 1}))}


def test_an_unknown_value_version_is_unreadable():
    with pytest.raises(BadRecord):
        rec.decode_group_metadata(b"\x00\x01" + bytes(13))
