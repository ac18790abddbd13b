"""ClusterEvents (broker/cluster/cluster_events.py): which writes count as elections, which of
those as unclean, and which ISR changes as shrinks or expands (the cluster test,
compat_tests/cluster/test_cluster_metrics.py, moves them on real brokers)."""

from __future__ import annotations

import asyncio

from broker.cluster.cluster_events import ClusterEvents
from broker.cluster.etcd_layout import NO_LEADER, PartitionState
from broker.cluster.leader_election import on_broker_change


def state(leader: int, isr: tuple[int, ...], replicas: tuple[int, ...] = (1, 2, 3)) -> PartitionState:
    return PartitionState("t", 0, leader, 5, isr, 7, replicas)


def write_over(current: PartitionState):
    """A compare-and-swap against `current` that the rule decides, as EtcdStore.update_partition."""
    async def write(rule):
        return rule(current)
    return write


def elect(events: ClusterEvents, current: PartitionState, alive: set[int], unclean: bool):
    return asyncio.run(events.electing(write_over(current), lambda s: on_broker_change(s, alive, unclean)))


def test_a_new_leader_from_the_isr_is_a_clean_election():
    events = ClusterEvents()
    assert elect(events, state(1, (1, 2)), {2, 3}, unclean=False).leader == 2
    assert (events.leader_elections, events.unclean_leader_elections) == (1, 0)
    assert events.election_seconds > 0


def test_a_leader_from_outside_the_isr_is_unclean():
    events = ClusterEvents()
    assert elect(events, state(NO_LEADER, (1,)), {3}, unclean=True).leader == 3
    assert (events.leader_elections, events.unclean_leader_elections) == (1, 1)


def test_going_offline_or_dropping_a_follower_elects_nobody():
    events = ClusterEvents()
    assert elect(events, state(1, (1,)), {2, 3}, unclean=False).leader == NO_LEADER
    assert elect(events, state(1, (1, 2)), {1, 3}, unclean=False).isr == (1,)
    assert elect(events, state(1, (1, 2)), {1, 2}, unclean=False) is None  # nothing to write
    assert (events.leader_elections, events.unclean_leader_elections) == (0, 0)


def test_isr_changes_count_by_direction():
    events = ClusterEvents()
    events.isr_changed((1, 2, 3), (1, 2))
    events.isr_changed((1, 2), (1, 2, 3))
    events.isr_changed((1, 2), (1, 3))  # a swap: neither (the leader proposes one direction at a time)
    assert (events.isr_shrinks, events.isr_expands) == (1, 1)
