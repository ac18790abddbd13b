"""Classic consumer groups with the real Apache Kafka Java client (kafka-clients 4.3.0).

Every group member is its own JVM running java/GroupCheck.java in `member` mode: subscribe()
with a ConsumerRebalanceListener, poll, report the records, commitSync() exactly what was
polled, and report the commit, all as JSON lines on stdout that `GroupMember`
(java_group_members.py) collects.
Separate processes rather than threads in one JVM, because that is what a consumer fleet is,
and because only a process can be SIGKILLed: a thread cannot die without its consumer's
heartbeat thread, socket and LeaveGroup going in an orderly way. The cost is a JVM start
(~1-2 s on two cores) per member.

The members are configured as a real application would be, with every setting the tests
depend on stated: group.protocol=classic (the 4.x default, explicit so that a later default
cannot switch these tests to KIP-848 silently), enable.auto.commit=false, session.timeout.ms
6000 (the broker's minimum), heartbeat.interval.ms 1000. The partition assignor is the client
default ([range, cooperative-sticky]; the group agrees on range, checked through Admin).

Messages are produced with kafka-python to explicit partitions, each value unique, so "every
message exactly once" is a check on values and on (partition, offset) pairs.

Admin (listConsumerGroups, describeConsumerGroups, listConsumerGroupOffsets,
deleteConsumerGroups) runs in one more JVM, GroupCheck's `admin` mode, over the JSON-line
request/reply protocol of java_client.JavaClient.

Brokers here run with --group-initial-rebalance-delay-ms 300 (default 3000) to keep tests fast,
and, like every compat test, once per storage mode. GROUPCHECK_LOG_JAR (see java_group_members.member_command) turns
the Java client's own logging on when a failure needs it.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.java_group_members import (
    PARTITIONS, SESSION_TIMEOUT_MS, GroupAdmin, GroupMember, all_records, assert_exactly_once, assert_no_failures,
    end_offsets, first_offsets, last_assigned, produce, wait_balanced, wait_committed, wait_consumed, wait_until)
from compat_tests.helpers.topics import create_topic, unique_topic

pytestmark = pytest.mark.timeout(180)

BROKER_ARGS = ("--group-initial-rebalance-delay-ms", "300")


# ---- fixtures and helpers --------------------------------------------------------------------

@pytest.fixture(scope="module")
def group_broker(storage_mode):
    """A broker with a short initial rebalance delay, shared by the module's tests."""
    proc = BrokerProcess(storage_mode=storage_mode, extra_args=list(BROKER_ARGS))
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture
def gbroker(group_broker):
    if not group_broker.is_running():
        group_broker.start()
    return group_broker


@pytest.fixture
def members(tmp_path):
    """`members(bootstrap, names, topic, group, **kw)` starts member JVMs; all stopped at teardown."""
    started: list[GroupMember] = []

    def start(bootstrap: str, names, topic: str, group: str, **kw) -> list[GroupMember]:
        new = [GroupMember(bootstrap, n, topic, group, tmp_path, **kw) for n in names]
        started.extend(new)
        return new

    yield start
    for m in started:
        m.stop()


@pytest.fixture
def admin_factory(tmp_path):
    made: list[GroupAdmin] = []

    def make(bootstrap: str) -> GroupAdmin:
        a = GroupAdmin(bootstrap, log_dir=tmp_path)
        made.append(a)
        assert a.call("version") == "4.3.0"
        return a

    yield make
    for a in made:
        a.close()


def start_balanced_trio(start, bootstrap: str, topic: str, group: str) -> list[GroupMember]:
    trio = start(bootstrap, ["a", "b", "c"], topic, group)
    for m in trio:
        started = m.wait_for("started", 30)
        assert started["groupProtocol"] == "classic"
    wait_balanced(trio)
    return trio


# ---- scenarios -----------------------------------------------------------------------------------

def test_three_members_split_six_partitions_exactly_once(gbroker, members):
    """3 member JVMs, one group, 6 partitions: 2 each, one generation, every message once."""
    topic = create_topic(gbroker.bootstrap, unique_topic("jgrp-split"), PARTITIONS)
    group = unique_topic("jgrp-split-g")
    before = produce(gbroker.bootstrap, topic, "early", 60)  # read while members join and rebalance
    trio = start_balanced_trio(members, gbroker.bootstrap, topic, group)
    after = produce(gbroker.bootstrap, topic, "late", 60)  # produced into a stable group
    wait_consumed(trio, [*before, *after])
    ends = end_offsets(before, after)
    wait_committed(trio, ends)
    finals = [last_assigned(m) for m in trio]  # before the closes rebalance the group again
    for m in trio:
        m.close()

    assert_no_failures(trio)
    assert [len(f["assignment"]) for f in finals] == [2, 2, 2], finals
    assert sorted(p for f in finals for p in f["assignment"]) == list(range(PARTITIONS)), finals
    assert len({f["generation"] for f in finals}) == 1, f"members ended in different generations: {finals}"
    assert finals[0]["generation"] >= 1
    assert len({f["memberId"] for f in finals}) == 3, "member ids must differ"
    assert_exactly_once(trio, before, after)
    # The committed offsets: each partition's last commit came from its final owner, at the end.
    for f, m in zip(finals, trio):
        got = m.committed()
        assert {p: got.get(p) for p in f["assignment"]} == {p: ends[p] for p in f["assignment"]}, m.name


def test_closed_member_partitions_move_without_redelivery(gbroker, members):
    """A member closes (LeaveGroup): its partitions go to the other two well before any session
    timeout, they resume at its commits, and nothing is delivered twice."""
    topic = create_topic(gbroker.bootstrap, unique_topic("jgrp-close"), PARTITIONS)
    group = unique_topic("jgrp-close-g")
    trio = start_balanced_trio(members, gbroker.bootstrap, topic, group)
    a, b, c = trio
    first = produce(gbroker.bootstrap, topic, "first", 60)
    wait_consumed(trio, first)
    wait_committed(trio, end_offsets(first))
    c_parts = c.assignment()
    closed = c.close()
    c_commits = c.committed()
    assert {p: c_commits.get(p) for p in c_parts} == {p: end_offsets(first)[p] for p in c_parts}, \
        "the closing member had committed everything it read"

    owned = wait_balanced([a, b], timeout=30)
    moved_at = max(last_assigned(m)["t"] for m in (a, b))
    assert moved_at - closed["t"] < SESSION_TIMEOUT_MS, (
        f"reassignment took {moved_at - closed['t']} ms after the close: the LeaveGroup should start "
        f"the rebalance, not the session timeout")
    assert c_parts <= owned["a"] | owned["b"]

    second = produce(gbroker.bootstrap, topic, "second", 60)
    wait_consumed([a, b], second)
    wait_committed([a, b], end_offsets(first, second))
    finals = {m.name: last_assigned(m) for m in (a, b)}  # before the closes rebalance the group again
    for m in (a, b):
        m.close()

    assert_no_failures(trio)
    assert_exactly_once(trio, first, second)
    # Whoever took c's partitions was told c's commits by committed() and started right there.
    for m in (a, b):
        fin = finals[m.name]
        for p in c_parts & set(fin["assignment"]):
            assert fin["committed"][str(p)] == c_commits[p], (m.name, p, fin)
            assert first_offsets(m, since_t=fin["t"]).get(p) == c_commits[p], (m.name, p)


def test_sigkilled_member_partitions_move_after_session_timeout(gbroker, members):
    """A member JVM is SIGKILLed in the middle of its work: no LeaveGroup; after
    session.timeout.ms (6 s) the broker expires it, the survivors take its partitions from the
    group's commits, and no message is lost. Redelivery is allowed exactly where at-least-once
    allows it: records the dead member read but had no confirmed commit for."""
    topic = create_topic(gbroker.bootstrap, unique_topic("jgrp-kill"), PARTITIONS)
    group = unique_topic("jgrp-kill-g")
    a, b = members(gbroker.bootstrap, ["a", "b"], topic, group)
    # c is slow: 5 records a poll, each batch "processed" for 100 ms before its commitSync.
    (c,) = members(gbroker.bootstrap, ["c"], topic, group, process_ms=100, **{"max.poll.records": "5"})
    trio = [a, b, c]
    for m in trio:
        assert m.wait_for("started", 30)["groupProtocol"] == "classic"
    wait_balanced(trio)
    c_parts = c.assignment()
    first = produce(gbroker.bootstrap, topic, "first", 600)  # 100 a partition: c needs ~4 s for its 200
    wait_until(lambda: len(c.records()) >= 40, 30, "c consuming", trio)
    c.kill()
    killed_at = int(time.time() * 1000)
    c_read = c.records()
    c_commits = c.committed()
    assert len(c_read) < 200, "c finished its partitions before the kill; the test needs it mid-way"
    # Produced while c is dead but still owns its partitions: these must wait for the survivors.
    second = produce(gbroker.bootstrap, topic, "second", 60)

    owned = wait_balanced([a, b], timeout=SESSION_TIMEOUT_MS / 1000 + 20)
    moved_at = max(last_assigned(m)["t"] for m in (a, b))
    took = moved_at - killed_at
    # c's last heartbeat was at most heartbeat.interval.ms (1 s) before the kill.
    assert SESSION_TIMEOUT_MS - 1500 <= took <= SESSION_TIMEOUT_MS + 10_000, \
        f"c's partitions moved {took} ms after SIGKILL; session.timeout.ms is {SESSION_TIMEOUT_MS}"
    assert c_parts <= owned["a"] | owned["b"]

    wait_consumed(trio, [*first, *second])
    ends = end_offsets(first, second)
    wait_committed([a, b], ends)
    finals = {m.name: last_assigned(m) for m in (a, b)}  # before the closes rebalance the group again
    for m in (a, b):
        m.close()
    assert_no_failures([a, b])

    # Nothing lost, nothing misplaced.
    want = {**first, **second}
    got = {v: (p, o) for p, o, v in all_records(trio)}
    assert got == want, f"missing {sorted(want.keys() - got.keys())[:10]}, extra {sorted(got.keys() - want.keys())[:10]}"
    # The survivors read nothing twice; c's records come again only past its last confirmed commit.
    survivors = Counter((p, o) for p, o, _ in all_records([a, b]))
    assert max(survivors.values()) == 1, [k for k, n in survivors.items() if n > 1][:10]
    again = sorted({(p, o) for p, o, _ in c_read} & survivors.keys())
    early = [(p, o) for p, o in again if o < c_commits.get(p, 0)]
    print(f"c read {len(c_read)} records before SIGKILL; {len(again)} of them were delivered again")
    assert not early, f"records redelivered although c's commit of them was confirmed: {early[:10]}"
    c_max = {p: max(o for q, o, _ in c_read if q == p) for p in {q for q, _, _ in c_read}}
    for m in (a, b):
        fin = finals[m.name]
        for p in c_parts & set(fin["assignment"]):
            seen = fin["committed"][str(p)]
            # What the broker holds: at least c's last confirmed commit, at most just past c's last read.
            assert c_commits.get(p, 0) <= (seen or 0) <= c_max.get(p, -1) + 1, (m.name, p, seen, c_commits, c_max)
            assert first_offsets(m, since_t=fin["t"]).get(p) == (seen or 0), (m.name, p)


def test_committed_offsets_survive_broker_kill_and_admin_ops(broker_factory, members, admin_factory):
    """commitSync, kill -9 the broker, restart it on the same data dir: Admin still lists the
    commits, and a new member resumes exactly there. Then Admin list/describe/offsets/delete."""
    broker = broker_factory(*BROKER_ARGS)
    topic = create_topic(broker.bootstrap, unique_topic("jgrp-restart"), PARTITIONS)
    group = unique_topic("jgrp-restart-g")
    produced = produce(broker.bootstrap, topic, "m", 120)
    ends = end_offsets(produced)

    (first,) = members(broker.bootstrap, ["first"], topic, group, stop_after=50, **{"max.poll.records": "5"})
    first.wait_for("closed", 60)
    first.proc.wait(15)
    assert_no_failures([first])
    commits = first.committed()
    consumed_first = len(first.records())
    assert 50 <= consumed_first < 120 and sum(commits.values()) == consumed_first, (commits, consumed_first)

    broker.kill()
    broker.start()

    admin = admin_factory(broker.bootstrap)
    key = {f"{topic}:{p}": o for p, o in commits.items()}
    assert admin.call("listGroupOffsets", group=group) == key, "commits after kill -9 and restart"
    listed = admin.call("listGroups")
    assert group in listed, listed
    assert listed[group]["state"] == "Empty" and listed[group]["simple"] is False, listed[group]
    desc = admin.call("describeGroups", groups=[group])[group]
    assert desc["ok"] and desc["state"] == "Empty" and desc["members"] == [], desc

    (second,) = members(broker.bootstrap, ["second"], topic, group)
    assigned = second.wait_for("assigned", 30)
    assert assigned["assignment"] == list(range(PARTITIONS)), assigned
    assert assigned["committed"] == {str(p): commits.get(p) for p in range(PARTITIONS)}, \
        "committed() as the new member sees it, right after the restart"
    wait_consumed([second], [v for v, (p, o) in produced.items() if o >= commits.get(p, 0)])
    wait_committed([first, second], ends)  # partitions the first member finished get no new commit
    starts = first_offsets(second)
    assert starts == {p: commits.get(p, 0) for p in range(PARTITIONS) if commits.get(p, 0) < ends[p]}, \
        "the new member's first record on each partition is the committed offset"
    assert_exactly_once([first, second], produced)

    # Admin on the live group.
    desc = admin.call("describeGroups", groups=[group])[group]
    assert desc["ok"], desc
    assert (desc["state"], desc["simple"], desc["assignor"]) == ("Stable", False, "range"), desc
    assert desc["coordinator"] is not None
    assert [(m["clientId"], m["memberId"], m["assignment"], m["topics"]) for m in desc["members"]] == \
        [("groupcheck-second", assigned["memberId"], list(range(PARTITIONS)), [topic])], desc
    listed = admin.call("listGroups")
    assert listed.get(group, {}).get("state") == "Stable", listed.get(group)
    assert group in admin.call("listGroups", states=["Stable"])
    assert group not in admin.call("listGroups", states=["Empty"])
    assert admin.call("listGroupOffsets", group=group) == {f"{topic}:{p}": o for p, o in ends.items()}
    refused = admin.call("deleteGroups", groups=[group])[group]
    assert not refused["ok"] and "GroupNotEmptyException" in refused["error"], refused

    second.close()
    assert_no_failures([second])
    desc = admin.call("describeGroups", groups=[group])[group]
    assert desc["ok"] and desc["state"] == "Empty" and desc["members"] == [], desc
    assert admin.call("deleteGroups", groups=[group]) == {group: {"ok": True}}
    assert group not in admin.call("listGroups")
    assert admin.call("listGroupOffsets", group=group) == {}
    again = admin.call("deleteGroups", groups=[group])[group]
    assert not again["ok"] and "GroupIdNotFoundException" in again["error"], again


def test_live_members_ride_out_a_broker_kill(broker_factory, members):
    """kill -9 of the broker under a stable two-member group: the members reconnect to the
    restarted coordinator, which rebuilt the group from __consumer_offsets, and go on under their
    old member ids, losing nothing.

    A rebalance does follow, and Kafka would have one too: with its only broker unreachable the
    Java client rebootstraps (metadata.recovery.strategy=rebootstrap, the 4.x default), its
    metadata cache briefly lists the topic with no partitions, and the leader's snapshot check
    ("cached metadata has changed ... to {topic=[]}") makes it rejoin. What the broker must get
    right is that the rejoin is a known member's, in the generation after the persisted one.
    """
    broker = broker_factory(*BROKER_ARGS)
    topic = create_topic(broker.bootstrap, unique_topic("jgrp-ride"), PARTITIONS)
    group = unique_topic("jgrp-ride-g")
    pair = members(broker.bootstrap, ["a", "b"], topic, group)
    for m in pair:
        m.wait_for("started", 30)
    before_kill = wait_balanced(pair)
    first = produce(broker.bootstrap, topic, "first", 60)
    wait_consumed(pair, first)
    wait_committed(pair, end_offsets(first))
    before = {m.name: last_assigned(m) for m in pair}

    broker.kill()
    broker.start()
    second = produce(broker.bootstrap, topic, "second", 60)
    wait_consumed(pair, second, timeout=45)
    wait_committed(pair, end_offsets(first, second), timeout=45)
    after = wait_balanced(pair, timeout=15)
    finals = {m.name: last_assigned(m) for m in pair}  # before the closes rebalance the group again
    for m in pair:
        m.close()

    assert_no_failures(pair)
    assert_exactly_once(pair, first, second)
    assert after == before_kill, f"assignment before the kill {before_kill}, after {after}"
    for name in before:
        assert finals[name]["memberId"] == before[name]["memberId"], \
            f"{name} had to rejoin as a new member: the restarted broker forgot it\n{finals[name]}"
        if finals[name] is not before[name] and finals[name] != before[name]:  # it rebalanced
            assert finals[name]["generation"] > before[name]["generation"], \
                f"generation did not move on from the persisted {before[name]['generation']}: {finals[name]}"
    assert len({f["generation"] for f in finals.values()}) == 1, finals
