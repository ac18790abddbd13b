"""The KIP-848 reconciliation table and its walk: no partition is ever held by two members'
clients at once, and members converge to any target that stops moving."""

from __future__ import annotations

import itertools
import uuid

from hypothesis import given
from hypothesis import strategies as st

from broker.groups.consumer import topic_partitions as tp
from broker.groups.consumer.reconciliation import (
    STEPS, CurrentAssignment, Fenced, MemberState, Step, reconcile,
)

T = uuid.UUID(int=7)
S, U, R = MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS


def parts(*ps: int):
    return {T: frozenset(ps)} if ps else {}


def step(member, target_epoch, target, owned, owners=None, subscribed=frozenset({T}), changed=False):
    owners = owners or {}
    return reconcile(member, target_epoch=target_epoch, target=target, subscribed=subscribed,
                     owner_epoch=lambda t, p: owners.get((t, p), -1), owned=owned,
                     subscription_changed=changed)


def test_the_table_is_total():
    assert set(STEPS) == set(itertools.product(MemberState, (True, False), (True, False), (True, False)))


def test_a_stable_member_at_the_target_epoch_stays():
    m = CurrentAssignment(S, 3, 2, parts(0, 1))
    assert step(m, 3, parts(0, 1), parts(0, 1)) is m


def test_partitions_taken_away_are_revoked_first_at_the_same_epoch():
    m = CurrentAssignment(S, 3, 2, parts(0, 1, 2))
    nxt = step(m, 4, parts(0, 3), parts(0, 1, 2))
    assert (nxt.state, nxt.epoch, nxt.assigned, nxt.pending_revocation) == (U, 3, parts(0), parts(1, 2))
    # still reporting 1: nothing moves
    assert step(nxt, 4, parts(0, 3), parts(0, 1)) is nxt
    # revoked: the member takes the target epoch and partition 3, which nobody holds
    done = step(nxt, 4, parts(0, 3), parts(0))
    assert (done.state, done.epoch, done.previous_epoch, done.assigned) == (S, 4, 3, parts(0, 3))


def test_a_partition_another_member_holds_waits_until_released():
    m = CurrentAssignment(S, 3, 2, parts(0))
    waiting = step(m, 4, parts(0, 1), parts(0), owners={(T, 1): 3})
    assert (waiting.state, waiting.epoch, waiting.assigned) == (R, 4, parts(0))
    released = step(waiting, 4, parts(0, 1), parts(0))
    assert (released.state, released.epoch, released.assigned) == (S, 4, parts(0, 1))


def test_a_member_that_does_not_say_what_it_owns_is_assumed_to_own_everything():
    m = CurrentAssignment(U, 3, 2, parts(0), parts(1))
    assert step(m, 4, parts(0), None) is m


def test_an_unsubscribed_topic_is_revoked_without_a_new_target():
    m = CurrentAssignment(S, 4, 3, parts(0, 1))
    nxt = step(m, 4, parts(0, 1), parts(0, 1), subscribed=frozenset(), changed=True)
    assert (nxt.state, nxt.epoch, nxt.assigned, nxt.pending_revocation) == (U, 4, {}, parts(0, 1))


def test_an_unknown_state_fences():
    m = CurrentAssignment(MemberState.UNKNOWN, 4, 3, parts(0))
    try:
        step(m, 4, parts(0), parts(0))
    except Fenced:
        return
    raise AssertionError("an unknown member state must fence")


def test_unknown_state_bytes_read_as_unknown():
    assert MemberState.from_byte(2) is R and MemberState.from_byte(9) is MemberState.UNKNOWN


# --- the walk ------------------------------------------------------------------------------

PARTITIONS = 6


@st.composite
def targets(draw, members: int):
    """A target: each partition to one member or to nobody."""
    owner = draw(st.lists(st.integers(-1, members - 1), min_size=PARTITIONS, max_size=PARTITIONS))
    return [tp.of((T, p) for p in range(PARTITIONS) if owner[p] == m) for m in range(members)]


class Walk:
    def __init__(self, members: int) -> None:
        self.members = [CurrentAssignment() for _ in range(members)]
        self.client_owned = [dict() for _ in range(members)]  # what each client consumes now
        self.target_epoch = 0
        self.target = [dict() for _ in range(members)]

    def owner_epoch(self, me: int):
        def lookup(topic, partition):
            for i, m in enumerate(self.members):
                if (topic, partition) in tp.pairs(m.held()):
                    return m.epoch
            return -1
        return lookup

    def heartbeat(self, i: int, reports: bool) -> None:
        owned = self.client_owned[i] if reports else None
        nxt = reconcile(self.members[i], target_epoch=self.target_epoch, target=self.target[i],
                        subscribed=frozenset({T}), owner_epoch=self.owner_epoch(i), owned=owned,
                        subscription_changed=False)
        self.members[i] = nxt
        self.client_owned[i] = nxt.assigned  # the client takes what the response assigns

    def check_safe(self) -> None:
        held = [tp.pairs(o) for o in self.client_owned]
        for a, b in itertools.combinations(held, 2):
            assert not a & b, "two clients consume one partition"
        coordinator_held = [tp.pairs(m.held()) for m in self.members]
        for a, b in itertools.combinations(coordinator_held, 2):
            assert not a & b, "two members hold one partition"
        for m in self.members:
            assert m.epoch <= self.target_epoch


@given(st.data(), st.integers(1, 4))
def test_clients_never_share_a_partition_and_converge(data, members):
    walk = Walk(members)
    for _ in range(data.draw(st.integers(1, 6))):
        walk.target_epoch += 1
        walk.target = data.draw(targets(members))
        for _ in range(data.draw(st.integers(0, 12))):
            walk.heartbeat(data.draw(st.integers(0, members - 1)), data.draw(st.booleans()))
            walk.check_safe()
    # the target stops moving: a few rounds of heartbeats reach it
    for _ in range(3):
        for i in range(members):
            walk.heartbeat(i, True)
            walk.check_safe()
    for i, m in enumerate(walk.members):
        assert (m.state, m.epoch, tp.normal(m.assigned)) == (S, walk.target_epoch, tp.normal(walk.target[i]))
        assert m.pending_revocation == {}
