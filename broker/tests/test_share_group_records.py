"""Share groups' records of `__consumer_offsets` (share_group_records.py): Kafka's byte layouts
of types 10-15; which of them a change writes (share_group_changes.py); and their replay
(share_group_replay.py) giving back the members with their epochs and assignments."""

from __future__ import annotations

import uuid

import pytest

from broker.groups.offsets_log import BadRecord
from broker.groups.offsets_store import StoredRecord
from broker.groups.share import share_group_records as rec
from broker.groups.share.share_group import ShareGroup
from broker.groups.share.share_group_changes import records_between, said_by
from broker.groups.share.share_group_replay import replaying

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def test_keys_are_the_type_then_the_group_id():
    assert rec.key(rec.GROUP_METADATA, "g") == b"\x00\x0b\x00\x01g"
    assert rec.decode_key(rec.key(rec.STATE_PARTITION_METADATA, "g")) == (rec.STATE_PARTITION_METADATA, "g", None)
    assert rec.key(rec.CURRENT_ASSIGNMENT, "g", "m") == b"\x00\x0e\x00\x01g\x00\x01m"
    assert rec.decode_key(rec.key(rec.MEMBER_METADATA, "g", "m")) == (rec.MEMBER_METADATA, "g", "m")
    with pytest.raises(BadRecord):
        rec.decode_key(b"\x00\x03\x00\x01g")  # a consumer group's record


def test_group_metadata_holds_the_epoch_and_kafkas_metadata_hash():
    raw = rec.group_metadata_value(7, -2)
    assert raw == b"\x00\x00" + (7).to_bytes(4, "big") + (-2).to_bytes(8, "big", signed=True) + b"\x00"
    assert rec.decode_group_metadata(raw) == (7, -2)


def test_member_records_are_kafkas_layouts():
    m = rec.MemberMetadata(None, "c", "/h", ("t1", "t2"))
    raw = rec.member_metadata_value(m)
    assert raw == b"\x00\x00" + b"\x00" + b"\x02c" + b"\x03/h" + b"\x03\x03t1\x03t2" + b"\x00"
    assert rec.decode_member_metadata(raw) == m
    assert rec.decode_member_metadata(rec.member_metadata_value(rec.MemberMetadata("r", "", "", ()))).rack_id == "r"
    current = rec.current_assignment_value(5, 3, {T1: frozenset({1, 0})})
    assert current == (b"\x00\x00" + (5).to_bytes(4, "big") + (3).to_bytes(4, "big") + b"\x00"
                       + b"\x02" + T1.bytes + b"\x03" + bytes(4) + (1).to_bytes(4, "big") + b"\x00" + b"\x00")
    assert rec.decode_current_assignment(current) == (5, 3, {T1: frozenset({0, 1})})
    assert rec.decode_target_member(rec.target_member_value({T2: frozenset({4})})) == {T2: frozenset({4})}
    assert rec.target_metadata_value(9) == b"\x00\x00" + (9).to_bytes(4, "big") + b"\x00"


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
    with pytest.raises(BadRecord):
        rec.decode_member_metadata(b"\x00\x00\x00")  # cut short


TOPICS = {"t1": (T1, 2)}


def _written(group, held=None):
    """The records a write of `group` makes after `held`, as (type, member, value or None)."""
    out = []
    for key, value in records_between(group.group_id, held or {}, said_by(group), 0):
        record_type, _group, member = rec.decode_key(key)
        out.append((record_type, member, value))
    return out


def test_a_join_writes_kafkas_records_in_kafkas_order_and_a_leave_tombstones_the_member():
    g = ShareGroup("g")
    g.join_or_heartbeat("a", 0, ("t1",), None, "c", "/h", TOPICS)
    joined = _written(g)
    assert [(t, m) for t, m, _v in joined] == [
        (rec.MEMBER_METADATA, "a"), (rec.GROUP_METADATA, None), (rec.TARGET_MEMBER, "a"),
        (rec.TARGET_METADATA, None), (rec.CURRENT_ASSIGNMENT, "a"), (rec.STATE_PARTITION_METADATA, None)]
    held = said_by(g)
    assert _written(g, held) == []  # a heartbeat that changes nothing writes nothing
    g.join_or_heartbeat("b", 0, ("t1",), None, "c", "/h", TOPICS)
    assert {(t, m) for t, m, _v in _written(g, held)} == {
        (rec.MEMBER_METADATA, "b"), (rec.GROUP_METADATA, None), (rec.TARGET_MEMBER, "a"), (rec.TARGET_MEMBER, "b"),
        (rec.TARGET_METADATA, None), (rec.CURRENT_ASSIGNMENT, "b")}  # a's current moves at its next heartbeat
    held = said_by(g)
    g.leave("b", TOPICS)
    left = _written(g, held)
    assert [(t, m, v) for t, m, v in left[:3]] == [
        (rec.CURRENT_ASSIGNMENT, "b", None), (rec.TARGET_MEMBER, "b", None), (rec.MEMBER_METADATA, "b", None)]
    assert all(v is not None for _t, _m, v in left[3:])
    deleted = records_between("g", said_by(g), {}, 0)
    assert rec.decode_key(deleted[-1][0])[0] == rec.GROUP_METADATA and all(v is None for _k, v in deleted)


class _Replayed:
    """What replaying needs of the share coordinator: its groups, and the call once the stream ends."""

    def __init__(self) -> None:
        self.groups, self.restored_ids = {}, set()

    def restored(self, group_ids) -> None:
        self.restored_ids = set(group_ids)


def _stored(group_id: str, records) -> list[StoredRecord]:
    return [StoredRecord(0, i, k, v) for i, (k, v) in enumerate(records)]


def test_the_replay_gives_back_members_epochs_and_assignments_and_a_heartbeat_at_the_old_epoch_goes_on():
    g = ShareGroup("g")
    a = g.join_or_heartbeat("a", 0, ("t1",), "rack", "c", "/h", TOPICS)
    b = g.join_or_heartbeat("b", 0, ("t1",), None, "c", "/h", TOPICS)
    a = g.join_or_heartbeat("a", a.epoch, None, None, "c", "/h", TOPICS)  # a moves on: its previous epoch is kept
    assert 0 < a.previous_epoch < a.epoch == b.epoch
    log = _stored("g", records_between("g", {}, said_by(g), 0))
    coordinator = _Replayed()
    assert list(replaying(coordinator, log)) == []
    assert coordinator.restored_ids == {"g"}
    again = coordinator.groups["g"]
    assert said_by(again) == said_by(g)
    assert (again.members["a"].epoch, again.members["a"].rack_id, again.members["b"].assignment) == \
        (a.epoch, "rack", b.assignment)
    before = (again.epoch, dict(again.targets))
    resumed = again.join_or_heartbeat("b", b.epoch, None, None, "c", "/h", TOPICS)
    assert (resumed.epoch, resumed.assignment, again.epoch, again.targets) == (b.epoch, b.assignment, *before)
    lagging = again.join_or_heartbeat("a", a.previous_epoch, None, None, "c", "/h", TOPICS)
    assert lagging.epoch == again.epoch and lagging.sent is None  # its previous epoch: its answer was lost


def test_a_replayed_leave_and_delete_bring_nothing_back():
    g = ShareGroup("g")
    g.join_or_heartbeat("a", 0, ("t1",), None, "c", "/h", TOPICS)
    held = said_by(g)
    log = records_between("g", {}, held, 0)
    g.leave("a", TOPICS)
    log += records_between("g", held, said_by(g), 0)
    coordinator = _Replayed()
    list(replaying(coordinator, _stored("g", log)))
    assert coordinator.groups["g"].members == {} and coordinator.groups["g"].targets == {}
    log += records_between("g", said_by(g), {}, 0)
    coordinator = _Replayed()
    list(replaying(coordinator, _stored("g", log)))
    assert coordinator.groups == {} and coordinator.restored_ids == {"g"}
