"""Share-group membership and assignment (share_group.py, simple_assignor.py): pure logic, no broker."""

from __future__ import annotations

import uuid

import pytest

from wire.error_codes import ErrorCode
from broker.groups.share.share_group import EMPTY, STABLE, ChangeRefused, ShareGroup
from broker.groups.share.simple_assignor import assign

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {"t1": (T1, 4), "t2": (T2, 1)}


def test_the_simple_assignor_spreads_partitions_and_shares_them_when_members_outnumber_them():
    two = assign({"a": {T1}, "b": {T1}}, {T1: 4})
    assert two == {"a": {T1: frozenset({0, 2})}, "b": {T1: frozenset({1, 3})}}
    five = assign({m: {T1} for m in "abcde"}, {T1: 2})
    assert all(len(a[T1]) == 1 for a in five.values())
    assert sorted(p for a in five.values() for p in a[T1]) == [0, 0, 0, 1, 1]
    assert assign({"a": {T1}, "b": {T2}}, {T1: 1, T2: 1}) == {"a": {T1: frozenset({0})}, "b": {T2: frozenset({0})}}


def test_members_join_take_the_group_epoch_and_leave():
    g = ShareGroup("g")
    a = g.join_or_heartbeat("a", 0, ("t1",), None, "c", "h", TOPICS)
    assert a.epoch == g.epoch > 0 and a.assignment == {T1: frozenset({0, 1, 2, 3})} and g.state == STABLE
    b = g.join_or_heartbeat("b", 0, ("t1", "t2"), None, "c", "h", TOPICS)
    assert b.assignment == {T1: frozenset({1, 3}), T2: frozenset({0})}
    a = g.join_or_heartbeat("a", a.epoch, None, None, "c", "h", TOPICS)  # a catches up with the group
    assert a.epoch == b.epoch == g.epoch and a.assignment == {T1: frozenset({0, 2})}
    g.leave("b", TOPICS)
    g.leave("a", TOPICS)
    assert g.state == EMPTY


def test_a_new_partition_moves_the_group_epoch():
    g = ShareGroup("g")
    joined_at = g.join_or_heartbeat("a", 0, ("t2",), None, "c", "h", TOPICS).epoch
    grown = dict(TOPICS, t2=(T2, 2))
    again = g.join_or_heartbeat("a", joined_at, None, None, "c", "h", grown)
    assert again.epoch > joined_at and again.assignment == {T2: frozenset({0, 1})}


@pytest.mark.parametrize("member, epoch, subscribed, error", [
    ("x", 3, None, ErrorCode.unknown_member_id),
    ("a", 99, None, ErrorCode.fenced_member_epoch),
    ("z", 0, None, ErrorCode.invalid_request),
])
def test_heartbeats_refused(member, epoch, subscribed, error):
    g = ShareGroup("g")
    g.join_or_heartbeat("a", 0, ("t1",), None, "c", "h", TOPICS)
    with pytest.raises(ChangeRefused) as refused:
        g.join_or_heartbeat(member, epoch, subscribed, None, "c", "h", TOPICS)
    assert refused.value.error == error

