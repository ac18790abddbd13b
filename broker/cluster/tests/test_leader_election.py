"""Kafka's leader/ISR rules (leader_election.py), by example and as a state walk against a model
of which replicas hold every acknowledged record."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.cluster import leader_election as rules
from broker.cluster.cluster_error import ClusterError
from broker.cluster.etcd_layout import NO_LEADER, PartitionState
from wire.error_codes import ErrorCode


def state(leader, isr, replicas=(1, 2, 3), leader_epoch=4, partition_epoch=7) -> PartitionState:
    return PartitionState("t", 0, leader, leader_epoch, tuple(isr), partition_epoch, tuple(replicas))


def test_dead_leader_replaced_by_first_live_isr_member_in_replica_order():
    new = rules.on_broker_change(state(1, (3, 1, 2)), alive={2, 3}, unclean=False)
    assert (new.leader, new.isr, new.leader_epoch, new.partition_epoch) == (2, (2, 3), 5, 8)


def test_dead_follower_leaves_isr_without_leader_epoch_bump():
    new = rules.on_broker_change(state(1, (1, 2, 3)), alive={1, 2}, unclean=False)
    assert (new.leader, new.isr, new.leader_epoch, new.partition_epoch) == (1, (1, 2), 4, 8)


def test_all_isr_dead_goes_offline_keeping_isr_then_returning_member_leads():
    offline = rules.on_broker_change(state(1, (1,)), alive={2, 3}, unclean=False)
    assert (offline.leader, offline.isr, offline.leader_epoch) == (NO_LEADER, (1,), 5)
    assert rules.on_broker_change(offline, alive={2, 3}, unclean=False) is None
    back = rules.on_broker_change(offline, alive={1, 2, 3}, unclean=False)
    assert (back.leader, back.isr, back.leader_epoch) == (1, (1,), 6)


def test_unclean_election_takes_any_live_replica():
    new = rules.on_broker_change(state(1, (1,)), alive={3}, unclean=True)
    assert (new.leader, new.isr) == (3, (3,))


def test_nothing_to_do_when_every_isr_member_lives():
    assert rules.on_broker_change(state(2, (2, 3)), alive={2, 3}, unclean=False) is None


def test_preferred_election():
    assert rules.preferred(state(2, (1, 2, 3)), alive={1, 2, 3}).leader == 1
    for s, alive, code in [(state(1, (1, 2)), {1, 2}, ErrorCode.election_not_needed),
                           (state(2, (2, 3)), {1, 2, 3}, ErrorCode.preferred_leader_not_available),
                           (state(2, (1, 2)), {2, 3}, ErrorCode.preferred_leader_not_available)]:
        with pytest.raises(ClusterError) as exc:
            rules.preferred(s, alive)
        assert exc.value.code == code


@pytest.mark.parametrize("args, code", [
    ((1, 3, 7, (1, 2)), ErrorCode.fenced_leader_epoch),
    ((1, 5, 7, (1, 2)), ErrorCode.fenced_leader_epoch),
    ((1, 4, 6, (1, 2)), ErrorCode.invalid_update_version),
    ((2, 4, 7, (1, 2)), ErrorCode.not_leader_or_follower),
    ((1, 4, 7, (2, 3)), ErrorCode.invalid_request),      # leader missing
    ((1, 4, 7, (1, 9)), ErrorCode.invalid_request),      # not a replica
    ((1, 4, 7, (1, 1)), ErrorCode.invalid_request),      # twice
    ((1, 4, 7, (1, 3)), ErrorCode.ineligible_replica),   # 3 is dead
])
def test_alter_partition_refusals(args, code):
    requester, leader_epoch, partition_epoch, isr = args
    with pytest.raises(ClusterError) as exc:
        rules.alter_partition(state(1, (1, 2)), requester, leader_epoch, partition_epoch, isr, alive={1, 2})
    assert exc.value.code == code


def test_alter_partition_bumps_partition_epoch_only():
    new = rules.alter_partition(state(1, (1,)), 1, 4, 7, (1, 2, 3), alive={1, 2, 3})
    assert (new.isr, new.leader_epoch, new.partition_epoch) == ((1, 2, 3), 4, 8)


BROKERS = (1, 2, 3)
events = st.lists(st.tuples(st.sampled_from(["kill", "revive", "write", "catch_up", "preferred"]),
                            st.sampled_from(BROKERS)), max_size=40)


@settings(max_examples=500)
@given(replicas=st.permutations(BROKERS).flatmap(lambda p: st.integers(1, 3).map(lambda n: tuple(p[:n]))),
       events=events)
def test_clean_elections_never_lose_an_acknowledged_record(replicas, events):
    """`complete` = the replicas holding every record acknowledged with acks=all (written to the
    whole ISR). With unclean elections off, a leader is always one of them."""
    s = PartitionState("t", 0, replicas[0], 0, replicas, 0, replicas)
    alive, complete = set(BROKERS), set(replicas)
    for kind, broker in events:
        before = s
        if kind == "kill":
            alive.discard(broker)
        elif kind == "revive":
            alive.add(broker)
        elif kind == "write" and s.leader != NO_LEADER:
            complete = set(s.isr)  # acks=all: every ISR member has it, nobody else
        elif kind == "catch_up" and s.leader != NO_LEADER and broker in s.replicas and broker in alive \
                and broker not in s.isr:
            complete.add(broker)  # a follower joins the ISR only once it holds the HW
            s = rules.alter_partition(s, s.leader, s.leader_epoch, s.partition_epoch, (*s.isr, broker), alive)
        elif kind == "preferred":
            try:
                s = rules.preferred(s, alive)
            except ClusterError:
                pass
        s = rules.on_broker_change(s, alive, unclean=False) or s
        assert s.isr and set(s.isr) <= set(s.replicas) and len(set(s.isr)) == len(s.isr)
        assert s.leader_epoch >= before.leader_epoch and s.partition_epoch >= before.partition_epoch
        if s != before:
            assert s.partition_epoch > before.partition_epoch
        if s.leader != before.leader:
            assert s.leader_epoch > before.leader_epoch
        if s.leader == NO_LEADER:
            assert not set(s.isr) & alive
        else:
            assert s.leader in alive and s.leader in s.isr and set(s.isr) <= alive
            assert s.leader in complete
