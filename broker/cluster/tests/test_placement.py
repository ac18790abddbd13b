"""Kafka's rack-unaware placement, checked against Kafka's own expected layout and by properties."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.cluster.cluster_error import ClusterError
from broker.cluster.placement import assign_replicas, check_assignments
from wire.error_codes import ErrorCode


def test_matches_kafkas_layout_for_five_brokers_start_zero():
    # AdminUtilsTest.testReplicaAssignment: brokers 0-4, 10 partitions, RF 3, fixed start 0
    expected = [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1],
                [0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2]]
    assert assign_replicas([4, 2, 0, 3, 1], 10, 3, start_index=0) == expected


def test_rf3_on_three_brokers_gives_each_broker_one_leadership():
    layout = assign_replicas([1, 2, 3], 3, 3, start_index=2)
    assert sorted(r[0] for r in layout) == [1, 2, 3]
    assert all(sorted(r) == [1, 2, 3] for r in layout)


def test_adding_partitions_continues_the_leaders_round_robin():
    # As Kafka's addPartitions: same start index, partition ids continue; the follower shift
    # restarts, so only the leaders are guaranteed to line up with a layout made in one go.
    whole = assign_replicas(range(5), 10, 3, start_index=1)
    added = assign_replicas(range(5), 4, 3, start_index=1, first_partition=6)
    assert [r[0] for r in added] == [r[0] for r in whole[6:]]


@pytest.mark.parametrize("rf, code", [(4, ErrorCode.invalid_replication_factor), (0, ErrorCode.invalid_replication_factor)])
def test_refuses_impossible_replication_factors(rf, code):
    with pytest.raises(ClusterError) as exc:
        assign_replicas([1, 2, 3], 3, rf, start_index=0)
    assert exc.value.code == code


@given(brokers=st.sets(st.integers(0, 1000), min_size=1, max_size=9),
       partitions=st.integers(1, 60), data=st.data())
def test_replicas_distinct_and_leadership_balanced(brokers, partitions, data):
    rf = data.draw(st.integers(1, len(brokers)))
    start = data.draw(st.integers(0, len(brokers) - 1))
    layout = assign_replicas(brokers, partitions, rf, start)
    assert len(layout) == partitions
    for replicas in layout:
        assert len(replicas) == rf and len(set(replicas)) == rf and set(replicas) <= brokers
    leaders = Counter(r[0] for r in layout)
    assert max(leaders.values()) - min(leaders.get(b, 0) for b in brokers) <= 1


def test_explicit_assignments_checked_like_kraft():
    assert check_assignments([[1, 2], [2, 3]], {1, 2, 3}) == [[1, 2], [2, 3]]
    for bad in ([[1, 1]], [[1, 9]], [[1, 2], [3]], [[]]):
        with pytest.raises(ClusterError) as exc:
            check_assignments(bad, {1, 2, 3})
        assert exc.value.code == ErrorCode.invalid_replica_assignment
    with pytest.raises(ClusterError):
        check_assignments([[1]], {1, 2, 3}, expected_length=2)
