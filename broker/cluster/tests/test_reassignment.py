"""Reassignment rules (reassignment.py) by example, after KRaft's PartitionReassignmentReplicas /
PartitionReassignmentRevert cases, and as a state walk mixed with broker deaths, catch-ups and
acks=all writes: no reassignment ever leaves the ISR or the leader without a record every
ISR member acknowledged."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.cluster import leader_election, reassignment
from broker.cluster.cluster_error import ClusterError
from broker.cluster.etcd_layout import NO_LEADER, EtcdLayout, PartitionState
from wire.error_codes import ErrorCode


def state(leader, isr, replicas=(1, 2, 3), leader_epoch=4, partition_epoch=7, adding=(), removing=()):
    return PartitionState("t", 0, leader, leader_epoch, tuple(isr), partition_epoch, tuple(replicas),
                          tuple(adding), tuple(removing))


ALL = {1, 2, 3, 4, 5}


def join(s: PartitionState, broker: int, alive=frozenset(ALL)) -> PartitionState:
    """The leader's AlterPartition adding a caught-up follower, as ClusterMetadata writes it."""
    grown = leader_election.alter_partition(s, s.leader, s.leader_epoch, s.partition_epoch, (*s.isr, broker), alive)
    return reassignment.complete_if_ready(grown, alive)


def test_move_one_replica_grows_then_completes_when_the_new_one_joins():
    grown = reassignment.start(state(1, (1, 2, 3)), [1, 2, 4], ALL)
    assert (grown.replicas, grown.adding, grown.removing) == ((1, 2, 4, 3), (4,), (3,))
    assert (grown.leader, grown.isr, grown.leader_epoch, grown.partition_epoch) == (1, (1, 2, 3), 4, 8)
    assert reassignment.in_progress(grown) and reassignment.target_replicas(grown) == (1, 2, 4)
    done = join(grown, 4)
    assert (done.replicas, done.isr, done.adding, done.removing) == ((1, 2, 4), (1, 2, 4), (), ())
    # one write: ISR change and completion together; the leader epoch fences the removed replica 3
    assert (done.leader, done.leader_epoch, done.partition_epoch) == (1, 5, 9)


def test_moving_the_only_replica_hands_leadership_to_the_new_one():
    grown = reassignment.start(state(1, (1,), replicas=(1,)), [2], ALL)
    assert (grown.replicas, grown.adding, grown.removing, grown.leader) == ((2, 1), (2,), (1,), 1)
    done = join(grown, 2)
    assert (done.leader, done.replicas, done.isr, done.leader_epoch) == (2, (2,), (2,), 5)


def test_several_new_replicas_complete_only_when_the_last_one_joins():
    grown = reassignment.start(state(1, (1,), replicas=(1,)), [3, 4, 5], ALL)
    assert (grown.replicas, grown.adding, grown.removing) == ((3, 4, 5, 1), (3, 4, 5), (1,))
    halfway = join(join(grown, 4), 3)
    assert reassignment.in_progress(halfway) and halfway.isr == (1, 4, 3) and halfway.leader == 1
    done = join(halfway, 5)
    assert (done.replicas, done.isr, done.leader) == ((3, 4, 5), (4, 3, 5), 3)


def test_a_new_order_alone_applies_at_once_and_preferred_election_follows_it():
    reordered = reassignment.start(state(1, (1, 2, 3)), [2, 3, 1], ALL)
    assert (reordered.replicas, reordered.adding, reordered.removing) == ((2, 3, 1), (), ())
    assert (reordered.leader, reordered.leader_epoch, reordered.partition_epoch) == (1, 4, 8)
    elected = leader_election.preferred(reordered, ALL)
    assert (elected.leader, elected.leader_epoch) == (2, 5)


def test_shrinking_completes_at_once_and_moves_a_removed_leader():
    shrunk = reassignment.start(state(1, (1, 2, 3)), [2, 3], ALL)
    assert (shrunk.replicas, shrunk.isr, shrunk.leader, shrunk.leader_epoch, shrunk.partition_epoch) == \
        ((2, 3), (2, 3), 2, 5, 8)
    assert not reassignment.in_progress(shrunk)


def test_shrinking_to_replicas_outside_the_isr_waits_for_one_of_them_to_join():
    waiting = reassignment.start(state(1, (1,)), [2, 3], ALL)
    assert (waiting.replicas, waiting.removing, waiting.isr, waiting.leader) == ((2, 3, 1), (1,), (1,), 1)
    done = join(waiting, 2)
    assert (done.replicas, done.isr, done.leader, done.removing) == ((2, 3), (2,), 2, ())


def test_nothing_to_change_is_none():
    assert reassignment.start(state(1, (1, 2, 3)), [1, 2, 3], ALL) is None
    grown = reassignment.start(state(1, (1,), replicas=(1,)), [2], ALL)
    assert reassignment.start(grown, [2], ALL) is None  # the same target again


def test_a_new_target_replaces_one_in_progress():
    grown = reassignment.start(state(1, (1, 2, 3)), [1, 2, 4], ALL)
    again = reassignment.start(grown, [1, 2, 5], ALL)
    assert (again.replicas, again.adding, again.removing) == ((1, 2, 5, 3, 4), (5,), (3, 4))
    moving = reassignment.start(state(1, (1, 3), replicas=(1, 3)), [2, 3], ALL)
    # 2 is still catching up: naming [2, 3] again must not let 1 go before 2 is in sync
    assert reassignment.start(moving, [3, 2], ALL).adding == (2,)
    assert reassignment.in_progress(reassignment.start(moving, [3, 2], ALL))


@pytest.mark.parametrize("target, code, message", [
    ([], ErrorCode.invalid_replica_assignment, "empty replica list"),
    ([1, 1, 2], ErrorCode.invalid_replica_assignment, "more than once"),
    ([1, 2, 9], ErrorCode.invalid_replica_assignment, "includes broker 9, but no such broker is registered"),
])
def test_refusals(target, code, message):
    with pytest.raises(ClusterError) as exc:
        reassignment.start(state(1, (1, 2, 3)), target, ALL)
    assert exc.value.code == code and message in str(exc.value)


def test_replication_factor_change_refused_when_not_allowed():
    with pytest.raises(ClusterError) as exc:
        reassignment.start(state(1, (1, 2, 3)), [1, 2], ALL, allow_replication_factor_change=False)
    assert (exc.value.code, str(exc.value)) == (ErrorCode.invalid_replication_factor,
                                                "The replication factor is changed from 3 to 2")
    grown = reassignment.start(state(1, (1,), replicas=(1,)), [2], ALL)  # its size counts as the target's
    assert reassignment.start(grown, [3], ALL, allow_replication_factor_change=False).adding == (3,)


def test_cancel_reverts_to_the_replicas_before():
    grown = join(reassignment.start(state(1, (1, 2)), [1, 4, 5], ALL), 4)
    assert grown.isr == (1, 2, 4) and grown.adding == (4, 5)
    reverted = reassignment.cancel(grown, ALL, unclean_allowed=False)
    assert (reverted.replicas, reverted.isr, reverted.adding, reverted.removing) == ((1, 2, 3), (1, 2), (), ())
    assert (reverted.leader, reverted.leader_epoch, reverted.partition_epoch) == (1, grown.leader_epoch + 1,
                                                                                 grown.partition_epoch + 1)
    with pytest.raises(ClusterError) as exc:
        reassignment.cancel(reverted, ALL, unclean_allowed=False)
    assert exc.value.code == ErrorCode.no_reassignment_in_progress


def test_cancel_when_only_new_replicas_are_in_sync_needs_unclean_election():
    only_new = state(2, (2,), replicas=(2, 3, 1), adding=(2, 3), removing=(1,))
    with pytest.raises(ClusterError) as exc:
        reassignment.cancel(only_new, ALL, unclean_allowed=False)
    assert exc.value.code == ErrorCode.invalid_replica_assignment and "unclean leader election" in str(exc.value)
    reverted = reassignment.cancel(only_new, ALL, unclean_allowed=True)
    assert (reverted.replicas, reverted.isr, reverted.leader) == ((1,), (1,), 1)


def test_the_etcd_value_carries_a_reassignment_and_stays_as_before_without_one():
    layout = EtcdLayout("/p/")
    key = layout.partition_key("t", 0)
    plain = state(1, (1, 2, 3))
    assert b"adding" not in layout.encode(plain)
    moving = reassignment.start(plain, [1, 2, 4], ALL)
    assert layout.decode(key, layout.encode(moving)) == ("partitions", moving)
    assert layout.decode(key, layout.encode(plain)) == ("partitions", plain)


BROKERS = (1, 2, 3, 4)
targets = st.permutations(BROKERS).flatmap(lambda p: st.integers(1, 3).map(lambda n: list(p[:n])))
steps = st.lists(st.one_of(
    st.tuples(st.sampled_from(["kill", "revive", "write", "catch_up", "cancel", "preferred"]),
              st.sampled_from(BROKERS)),
    st.tuples(st.just("reassign"), targets)), max_size=40)


@settings(max_examples=500)
@given(steps=steps)
def test_reassignments_never_lose_an_acknowledged_record(steps):
    """`complete` = the replicas holding every record acknowledged with acks=all (the whole ISR
    had it). Reassignments, deaths, catch-ups and cancels in any order keep the ISR within it,
    the leader in it, and a finished reassignment at exactly its target."""
    s = PartitionState("t", 0, 1, 0, (1, 2), 0, (1, 2))
    alive, complete = set(BROKERS), {1, 2}
    for kind, arg in steps:
        before = s
        try:
            if kind == "kill":
                alive.discard(arg)
            elif kind == "revive":
                alive.add(arg)
            elif kind == "write" and s.leader != NO_LEADER:
                complete &= set(s.isr)
            elif kind == "catch_up" and s.leader != NO_LEADER and arg in s.replicas and arg in alive \
                    and arg not in s.isr:
                complete.add(arg)  # a follower joins only once it holds the high watermark
                s = join(s, arg, alive)
            elif kind == "reassign" and set(arg) <= alive:
                s = reassignment.start(s, arg, alive) or s
                if not reassignment.in_progress(s):
                    assert s.replicas == tuple(arg)
            elif kind == "cancel":
                s = reassignment.cancel(s, alive, unclean_allowed=False)
            elif kind == "preferred":
                s = leader_election.preferred(s, alive)
        except ClusterError:
            pass
        s = leader_election.on_broker_change(s, alive, unclean=False) or s
        assert s.isr and set(s.isr) <= set(s.replicas) and len(set(s.replicas)) == len(s.replicas)
        assert set(s.adding) <= set(s.replicas) and set(s.removing) <= set(s.replicas)
        assert not set(s.adding) & set(s.removing)
        assert set(s.isr) <= complete, "an ISR member lacks an acknowledged record"
        if s != before:
            assert s.partition_epoch > before.partition_epoch
        if s.leader != before.leader:
            assert s.leader_epoch > before.leader_epoch
        if s.leader != NO_LEADER:
            assert s.leader in s.isr and s.leader in alive
