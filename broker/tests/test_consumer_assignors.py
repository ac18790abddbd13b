"""The server-side assignors `uniform` and `range`: every partition once, to a subscriber;
uniform balanced and sticky; range contiguous and co-partitioned."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from broker.groups.consumer import range_assignor, uniform_assignor
from broker.groups.consumer import topic_partitions as tp
from broker.groups.consumer.assignor_spec import MemberSpec
from broker.groups.consumer.target_assignment import preferred_assignor

TOPICS = [uuid.UUID(int=i + 1) for i in range(4)]


@st.composite
def groups(draw, homogeneous: bool):
    counts = {t: draw(st.integers(0, 12)) for t in TOPICS[:draw(st.integers(1, 4))]}
    n = draw(st.integers(1, 6))
    every = frozenset(counts)
    members = {}
    for i in range(n):
        subs = every if homogeneous else frozenset(draw(st.sets(st.sampled_from(sorted(counts)))))
        members[f"m{i}"] = MemberSpec(subs)
    return members, counts


def check_valid(members, counts, result) -> None:
    seen = set()
    for m, a in result.items():
        for t, p in tp.pairs(a):
            assert t in members[m].topics and 0 <= p < counts[t]
            assert (t, p) not in seen
            seen.add((t, p))
    wanted = {(t, p) for t, n in counts.items() for p in range(n)
              if any(t in s.topics for s in members.values())}
    assert seen == wanted


@given(groups(homogeneous=False), st.sampled_from([uniform_assignor.assign, range_assignor.assign]))
def test_every_subscribed_partition_goes_to_exactly_one_subscriber(group, assign):
    members, counts = group
    check_valid(members, counts, assign(members, counts))


@given(groups(homogeneous=True))
def test_uniform_is_balanced_for_identical_subscriptions(group):
    members, counts = group
    sizes = [tp.size(a) for a in uniform_assignor.assign(members, counts).values()]
    assert max(sizes) - min(sizes) <= 1


@given(groups(homogeneous=False))
def test_uniform_leaves_no_move_that_evens_it_out(group):
    members, counts = group
    result = uniform_assignor.assign(members, counts)
    for giver, a in result.items():
        for t, _p in tp.pairs(a):
            for taker, spec in members.items():
                assert not (t in spec.topics and tp.size(result[taker]) + 2 <= tp.size(a))


@given(groups(homogeneous=True), st.data())
def test_uniform_is_sticky(group, data):
    members, counts = group
    first = uniform_assignor.assign(members, counts)
    again = {m: MemberSpec(s.topics, first[m]) for m, s in members.items()}
    assert uniform_assignor.assign(again, counts) == first  # nothing changed: nothing moves
    # a member joins: the others only give partitions up, never trade them
    joined = {**again, "new": MemberSpec(frozenset(counts))}
    after = uniform_assignor.assign(joined, counts)
    for m in members:
        assert tp.is_subset(after[m], first[m])
    sizes = [tp.size(a) for a in after.values()]
    assert max(sizes) - min(sizes) <= 1


def test_range_gives_contiguous_ranges_the_first_members_one_more():
    t = TOPICS[0]
    members = {m: MemberSpec(frozenset({t})) for m in ("b", "a", "c")}
    result = range_assignor.assign(members, {t: 7})
    assert result == {"a": {t: frozenset({0, 1, 2})}, "b": {t: frozenset({3, 4})}, "c": {t: frozenset({5, 6})}}


@given(st.integers(1, 5), st.integers(0, 20))
def test_range_co_partitions_topics_of_equal_size(n, count):
    a, b = TOPICS[:2]
    members = {f"m{i}": MemberSpec(frozenset({a, b})) for i in range(n)}
    for assigned in range_assignor.assign(members, {a: count, b: count}).values():
        assert assigned.get(a, frozenset()) == assigned.get(b, frozenset())


def test_the_assignor_most_members_ask_for_wins_else_the_first_configured():
    assert preferred_assignor(("uniform", "range"), [None, None]) == "uniform"
    assert preferred_assignor(("uniform", "range"), ["range", None, "range", "uniform"]) == "range"
    assert preferred_assignor(("uniform", "range"), ["range", "uniform"]) == "uniform"
