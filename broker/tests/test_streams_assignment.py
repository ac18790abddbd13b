"""The pure parts of streams groups: topology configuration (Kafka's InternalTopicManager), the
sticky task assignor, and a member's reconciliation toward its target."""

from __future__ import annotations

import random

import pytest

from broker.groups.consumer.reconciliation import MemberState
from broker.groups.streams import sticky_assignor
from broker.groups.streams.reconciliation import CurrentTasks, Fenced, Holders, reconcile
from broker.groups.streams.sticky_assignor import MemberView
from broker.groups.streams.tasks import Tasks
from broker.groups.streams.topology import (
    INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS, MISSING_SOURCE_TOPICS, InvalidTopology, Subtopology,
    TopicInfo, Topology, configure,
)


def counts(**topics: int):
    return lambda name: topics.get(name.replace("-", "_"))


# --- topology -------------------------------------------------------------------------------------

def test_changelog_partitions_follow_the_widest_source():
    t = Topology(1, (Subtopology("0", ("a", "b"), changelog_topics=(TopicInfo("app-store-changelog"),)),))
    c = configure(t, counts(a=2, b=5))
    assert c.status == (MISSING_INTERNAL_TOPICS, "Internal topics are missing: app-store-changelog")
    assert c.to_create["app-store-changelog"].partitions == 5 and not c.ready
    ready = configure(t, counts(a=2, b=5, app_store_changelog=5))
    assert ready.ready and ready.tasks == {"0": 5}


def test_repartition_topics_take_their_writers_counts_through_a_chain():
    t = Topology(1, (
        Subtopology("0", ("in",), repartition_sink_topics=("r1",)),
        Subtopology("1", ("r1",), repartition_sink_topics=("r2",), repartition_source_topics=(TopicInfo("r1"),)),
        Subtopology("2", ("r2",), repartition_source_topics=(TopicInfo("r2"),)),
        Subtopology("3", ("fixed",), repartition_source_topics=(TopicInfo("fixed", partitions=7),)),
    ))
    c = configure(t, counts(**{"in": 4}))
    assert {n: i.partitions for n, i in c.to_create.items()} == {"fixed": 7, "r1": 4, "r2": 4}
    assert configure(t, counts(**{"in": 4}, r1=4, r2=4, fixed=7)).tasks == {"0": 4, "1": 4, "2": 4, "3": 7}


def test_missing_sources_and_wrong_counts_are_statuses():
    t = Topology(1, (Subtopology("0", ("b", "a"), changelog_topics=(TopicInfo("cl"),)),))
    assert configure(t, counts()).status == (MISSING_SOURCE_TOPICS, "Source topics a, b are missing.")
    wrong = configure(t, counts(a=2, b=2, cl=3))
    assert wrong.status == (INCORRECTLY_PARTITIONED_TOPICS, "Existing topic cl has different number of "
                                                            "partitions: expected 2, found 3")


def test_copartitioned_topics_must_agree_and_flexible_ones_follow():
    t = Topology(1, (
        Subtopology("0", ("left",), repartition_sink_topics=("rep",)),
        Subtopology("1", ("right", "rep"), repartition_source_topics=(TopicInfo("rep"),),
                    copartition_groups=(frozenset({"right", "rep"}),)),
    ))
    assert configure(t, counts(left=8, right=3)).to_create["rep"].partitions == 3
    clash = Topology(1, (Subtopology("0", ("x", "y"), copartition_groups=(frozenset({"x", "y"}),)),))
    assert configure(clash, counts(x=2, y=3)).status[0] == INCORRECTLY_PARTITIONED_TOPICS


def test_a_repartition_topic_nobody_writes_is_an_invalid_topology():
    t = Topology(1, (Subtopology("0", ("orphan",), repartition_source_topics=(TopicInfo("orphan"),)),))
    with pytest.raises(InvalidTopology):
        configure(t, counts())


# --- the sticky assignor ----------------------------------------------------------------------------

def _members(*names, previous=None, process=None):
    previous = previous or {}
    return {n: MemberView((process or {}).get(n, f"p-{n}"), previous.get(n, Tasks())) for n in names}


def _active(targets):
    return {m: {(s, p) for s, ps in t.active.items() for p in ps} for m, t in targets.items()}


def test_actives_are_balanced_and_each_task_runs_once():
    targets = sticky_assignor.assign(_members("a", "b", "c"), {"0": 4, "1": 3}, set(), 0)
    actives = _active(targets)
    assert sorted(len(a) for a in actives.values()) == [2, 2, 3]
    assert set().union(*actives.values()) == {("0", p) for p in range(4)} | {("1", p) for p in range(3)}
    assert sum(len(a) for a in actives.values()) == 7


def test_any_history_ends_balanced_with_each_task_once():
    rng = random.Random(1071)
    previous: dict[str, Tasks] = {}
    for _ in range(200):
        names = rng.sample("abcdefgh", rng.randint(1, 8))
        tasks = {"0": rng.randint(0, 12), "1": rng.randint(0, 5)}
        members = {n: MemberView(f"p-{ord(n) % 3}", previous.get(n, Tasks())) for n in names}
        targets = sticky_assignor.assign(members, tasks, {"0"}, rng.randint(0, 2))
        actives = _active(targets)
        loads = [len(a) for a in actives.values()]
        assert max(loads) - min(loads) <= 1 and sum(loads) == sum(tasks.values())
        stateful = [sum(1 for s, _ in a if s == "0") for a in actives.values()]
        assert max(stateful) - min(stateful) <= 1, "the stateful tasks balanced on their own"
        assert set().union(*actives.values()) == {(s, p) for s, n in tasks.items() for p in range(n)}
        for m, t in targets.items():
            for s, ps in t.standby.items():
                for p in ps:
                    (owner,) = [o for o, a in actives.items() if (s, p) in a]
                    assert members[owner].process_id != members[m].process_id
        previous = targets


def test_actives_stay_where_they_ran():
    first = sticky_assignor.assign(_members("a", "b"), {"0": 6}, set(), 0)
    again = sticky_assignor.assign(_members("a", "b", "c", previous=first), {"0": 6}, set(), 0)
    before, after = _active(first), _active(again)
    assert len(after["c"]) == 2
    assert after["a"] <= before["a"] and after["b"] <= before["b"], "only moved tasks change owner"


def test_standbys_go_to_another_process_and_only_for_stateful_tasks():
    members = _members("a", "b", "c", process={"a": "p1", "b": "p1", "c": "p2"})
    targets = sticky_assignor.assign(members, {"stateful": 4, "stateless": 4}, {"stateful"}, 2)
    proc = {"a": "p1", "b": "p1", "c": "p2"}
    for task in (("stateful", p) for p in range(4)):
        (owner,) = [m for m, t in targets.items() if task[1] in t.active.get(task[0], ())]
        standby_on = [m for m, t in targets.items() if task[1] in t.standby.get(task[0], ())]
        assert len(standby_on) == 1, "two processes: one standby at most"
        assert proc[standby_on[0]] != proc[owner]
    assert all(not t.standby.get("stateless") for t in targets.values())


def test_a_leaver_tasks_move_to_their_standby_holders():
    first = sticky_assignor.assign(_members("a", "b", "c"), {"0": 6}, {"0"}, 1)
    survivors = {m: v for m, v in _members("a", "b", "c", previous=first).items() if m != "a"}
    again = sticky_assignor.assign(survivors, {"0": 6}, {"0"}, 1)
    assert sorted(len(a) for a in _active(again).values()) == [3, 3]
    for s, ps in first["a"].active.items():
        for p in ps:
            (warm,) = [m for m, t in first.items() if p in t.standby.get(s, ())]
            (new_owner,) = [m for m, t in again.items() if p in t.active.get(s, ())]
            assert new_owner == warm or len(_active(again)[warm] - _active(first)[warm]) == 1, \
                "a moved task goes where its state is warm, unless that member is full"


# --- reconciliation --------------------------------------------------------------------------------

def _holders(active=None, other=None):
    active, other = active or {}, other or {}
    return Holders(lambda s, p: active.get((s, p)), lambda s, p: other.get((s, p), set()))


def test_an_active_task_waits_for_its_owner_to_revoke_it():
    target = Tasks(active={"0": frozenset({0, 1})})
    joined = reconcile(CurrentTasks(epoch=0), "p-b", target_epoch=3, target=target,
                       holders=_holders(active={("0", 1): "p-a"}), owned=Tasks())
    assert (joined.state, joined.epoch, joined.assigned.active) == (MemberState.UNRELEASED_PARTITIONS, 3,
                                                                    {"0": frozenset({0})})
    released = reconcile(joined, "p-b", target_epoch=3, target=target, holders=_holders(), owned=joined.assigned)
    assert (released.state, released.assigned.active) == (MemberState.STABLE, {"0": frozenset({0, 1})})


def test_a_member_revokes_before_it_moves_on():
    holding = CurrentTasks(epoch=2, assigned=Tasks(active={"0": frozenset({0, 1})}))
    target = Tasks(active={"0": frozenset({0})})
    revoking = reconcile(holding, "p-a", target_epoch=3, target=target, holders=_holders(), owned=holding.assigned)
    assert (revoking.state, revoking.epoch, revoking.pending_revocation.active) == (
        MemberState.UNREVOKED_PARTITIONS, 2, {"0": frozenset({1})})
    still = reconcile(revoking, "p-a", target_epoch=3, target=target, holders=_holders(), owned=holding.assigned)
    assert still is revoking
    done = reconcile(revoking, "p-a", target_epoch=3, target=target, holders=_holders(), owned=revoking.assigned)
    assert (done.state, done.epoch, done.previous_epoch) == (MemberState.STABLE, 3, 2)


def test_a_standby_waits_while_its_process_runs_the_task_active():
    target = Tasks(standby={"0": frozenset({0})})
    waiting = reconcile(CurrentTasks(epoch=1), "p-a", target_epoch=2, target=target,
                        holders=_holders(active={("0", 0): "p-a"}), owned=Tasks())
    assert waiting.state is MemberState.UNRELEASED_PARTITIONS and not waiting.assigned.standby
    elsewhere = reconcile(CurrentTasks(epoch=1), "p-b", target_epoch=2, target=target,
                          holders=_holders(active={("0", 0): "p-a"}), owned=Tasks())
    assert elsewhere.assigned.standby == {"0": frozenset({0})}


def test_an_unknown_state_is_fenced_unless_the_member_holds_nothing():
    unknown = CurrentTasks(state=MemberState.UNKNOWN, epoch=4)
    with pytest.raises(Fenced):
        reconcile(unknown, "p", target_epoch=4, target=Tasks(), holders=_holders(), owned=None)
    assert reconcile(unknown, "p", target_epoch=4, target=Tasks(), holders=_holders(),
                     owned=Tasks()).state is MemberState.STABLE
