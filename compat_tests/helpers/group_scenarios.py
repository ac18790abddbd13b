"""Consumer-group scenarios shared by the three client modules (test_groups_*.py).

Each client module supplies a `make_member(bootstrap, topic, group, name)` that returns a
`GroupMember`: one real subscribed consumer of that client, seen through six calls (poll,
assignment, commit, commit_offsets, committed, close). Every member polls in a thread of its
own (`RunningMember`) and commits synchronously after every poll that returned records; the
test thread takes in what each member reports (`pump`) and records every delivery in a
`Tracker`, so the checks can tell a redelivery of uncommitted work (allowed after a
rebalance) from a redelivery of committed work (a bug) or a lost record.

Records are produced by kafka-python with explicit partitions (value `b<batch>-<i>` to
partition i % 6), so every partition has work and each value is unique. The members themselves
(threads, the child process a SIGKILL test needs, the Tracker) are in group_members.py.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter, defaultdict

from kafka import KafkaProducer

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.group_members import (  # noqa: F401  (GroupMember, close_all: used by the client modules)
    PARTITIONS, ChildMember, Delivery, GroupMember, RunningMember, Tracker, balanced, close_all, covered, pump, settle)
from compat_tests.helpers.topics import create_topic, unique_topic

SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms
HEARTBEAT_MS = 1000
# A new group waits this long for more members instead of the default 3 s; fewer partitions
# of __consumer_offsets than the default 50 make its creation cheap.
GROUP_BROKER_ARGS = ("--group-initial-rebalance-delay-ms", "300", "--offsets-topic-partitions", "3")


def new_group(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def new_topic(bootstrap: str, prefix: str) -> str:
    return create_topic(bootstrap, unique_topic(prefix), PARTITIONS)


# --- producing -------------------------------------------------------------------------------

def produce(bootstrap: str, topic: str, batch: int, count: int) -> dict[str, tuple[int, int]]:
    """`count` records `b<batch>-<i>` to partition i % 6; returns value -> (partition, offset)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=False,
                             linger_ms=20, request_timeout_ms=15000, delivery_timeout_ms=30000,
                             max_block_ms=15000, client_id="compat-groups-producer")
    try:
        futures = []
        for i in range(count):
            value = f"b{batch}-{i:05d}"
            futures.append((value, producer.send(topic, value=value.encode(), partition=i % PARTITIONS)))
        producer.flush(30)
        out = {}
        for value, f in futures:
            md = f.get(timeout=30)
            out[value] = (md.partition, md.offset)
        return out
    finally:
        producer.close()


def _check_positions(produced: dict[str, tuple[int, int]], deliveries: list[Delivery]) -> None:
    wrong = [(d.value, (d.partition, d.offset), produced[d.value]) for d in deliveries
             if d.value in produced and (d.partition, d.offset) != produced[d.value]]
    assert not wrong, f"records delivered at another (partition, offset) than produced: {wrong[:5]}"


def _missing_extra(produced, deliveries) -> str:
    got = {d.value for d in deliveries}
    missing, extra = sorted(set(produced) - got), sorted(got - set(produced))
    return "" if not missing and not extra else (
        f"{len(missing)} lost (e.g. {[(v, produced[v]) for v in missing[:5]]}), "
        f"{len(extra)} delivered but not expected, i.e. never produced or before the committed offset "
        f"(e.g. {extra[:5]})")


def assert_exactly_once(produced: dict[str, tuple[int, int]], deliveries: list[Delivery]) -> None:
    problem = _missing_extra(produced, deliveries)
    assert not problem, problem
    dups = {v: [(d.member, d.partition, d.offset) for d in deliveries if d.value == v]
            for v, c in Counter(d.value for d in deliveries).items() if c > 1}
    assert not dups, f"{len(dups)} records delivered more than once: {dict(list(dups.items())[:5])}"
    _check_positions(produced, deliveries)


def assert_no_loss_redelivery_only_uncommitted(produced: dict[str, tuple[int, int]],
                                               deliveries: list[Delivery]) -> int:
    """Every record delivered; a record delivered again only if its earlier delivery's commit did
    not succeed. Returns how many redeliveries there were."""
    problem = _missing_extra(produced, deliveries)
    assert not problem, problem
    by_value: dict[str, list[Delivery]] = defaultdict(list)
    for d in deliveries:
        by_value[d.value].append(d)
    bad = {v: [(d.member, d.partition, d.offset, d.committed) for d in ds]
           for v, ds in by_value.items() if any(d.committed for d in ds[:-1])}
    assert not bad, (f"{len(bad)} records redelivered although their earlier delivery was committed "
                     f"(member, partition, offset, committed): {dict(list(bad.items())[:5])}")
    _check_positions(produced, deliveries)
    return sum(len(ds) - 1 for ds in by_value.values())


# --- scenarios ---------------------------------------------------------------------------------

def start_members(bootstrap: str, make_member, topic: str, group: str, names: list[str],
                  commit: bool = True) -> list[RunningMember]:
    return [RunningMember(make_member(bootstrap, topic, group, n), commit) for n in names]


def scenario_three_members_exactly_once(bootstrap: str, make_member, prefix: str) -> None:
    topic, group = new_topic(bootstrap, prefix), new_group(prefix)
    members = start_members(bootstrap, make_member, topic, group, [f"{prefix}-m{i}" for i in range(3)])
    tracker = Tracker()
    try:
        pump(members, tracker, balanced(members, [2, 2, 2]), 30, "3 members with 2 partitions each")
        owned = {m.name: m.assignment() for m in members}
        produced = produce(bootstrap, topic, 1, 600)
        pump(members, tracker, covered(tracker, produced), 30, "all 600 records consumed")
        settle(members, tracker)
        assert_exactly_once(produced, tracker.deliveries)
        for m in members:
            assert m.assignment() == owned[m.name], f"{m.name}: assignment changed without a rebalance"
            got = {d.partition for d in tracker.of(m.name)}
            assert got == owned[m.name], f"{m.name} owns {owned[m.name]} but was delivered partitions {got}"
            assert all(d.committed for d in tracker.of(m.name)), f"{m.name}: a commit failed in a stable group"
        committed = members[0].committed(list(range(PARTITIONS)))
        assert committed == end_offsets(produced), f"committed {committed}, end offsets {end_offsets(produced)}"
    finally:
        close_all(members)


def scenario_clean_leave(bootstrap: str, make_member, prefix: str) -> None:
    topic, group = new_topic(bootstrap, prefix), new_group(prefix)
    members = start_members(bootstrap, make_member, topic, group, [f"{prefix}-m{i}" for i in range(3)])
    tracker = Tracker()
    try:
        pump(members, tracker, balanced(members, [2, 2, 2]), 30, "3 members with 2 partitions each")
        produced = produce(bootstrap, topic, 1, 300)
        pump(members, tracker, covered(tracker, produced), 30, "batch 1 consumed and committed")
        leaver, survivors = members[2], members[:2]
        left_partitions = leaver.assignment()
        committed_by_leaver = {(d.partition, d.offset) for d in tracker.of(leaver.name) if d.committed}
        assert committed_by_leaver, f"{leaver.name} committed nothing before closing"
        start = time.monotonic()
        leaver.close()
        pump(survivors, tracker, balanced(survivors, [3, 3]), SESSION_TIMEOUT_MS / 1000,
             "survivors take over the partitions of the member that left, within the session timeout")
        took = time.monotonic() - start
        assert took < SESSION_TIMEOUT_MS / 1000, f"takeover took {took:.1f}s after LeaveGroup"
        produced.update(produce(bootstrap, topic, 2, 300))
        pump(survivors, tracker, covered(tracker, produced), 30, "batch 2 consumed by the survivors")
        settle(survivors, tracker)
        assert_no_loss_redelivery_only_uncommitted(produced, tracker.deliveries)
        again = [(d.member, d.partition, d.offset) for d in tracker.deliveries
                 if d.member != leaver.name and (d.partition, d.offset) in committed_by_leaver]
        assert not again, f"records committed by {leaver.name} before it left were redelivered: {again[:5]}"
        # The survivors start the leaver's partitions exactly where it had committed.
        for p in left_partitions:
            resume = 1 + max(o for pp, o in committed_by_leaver if pp == p)
            taken = sorted(d.offset for d in tracker.deliveries if d.member != leaver.name and d.partition == p)
            assert taken and taken[0] == resume, f"partition {p}: survivors began at {taken[:3]}, committed {resume}"
    finally:
        close_all(members)


def scenario_member_killed(bootstrap: str, make_member, factory: str, prefix: str) -> None:
    topic, group = new_topic(bootstrap, prefix), new_group(prefix)
    survivors = start_members(bootstrap, make_member, topic, group, [f"{prefix}-m{i}" for i in range(2)])
    child = ChildMember(factory, bootstrap, topic, group, f"{prefix}-child")
    members = [*survivors, child]
    tracker = Tracker()
    try:
        pump(members, tracker, balanced(members, [2, 2, 2]), 40, "3 members (one a child process) with 2 each")
        child_partitions = child.assignment()
        produced = produce(bootstrap, topic, 1, 300)
        pump(members, tracker, covered(tracker, produced), 30, "batch 1 consumed and committed")
        assert {d.partition for d in tracker.of(child.name)} == child_partitions
        start = time.monotonic()
        child.kill(tracker)
        committed_by_child = {(d.partition, d.offset) for d in tracker.of(child.name) if d.committed}
        assert committed_by_child, "the child committed nothing before it was killed"
        pump(survivors, tracker, balanced(survivors, [3, 3]), SESSION_TIMEOUT_MS / 1000 + 20,
             "survivors take over the killed member's partitions")
        took = time.monotonic() - start
        # Kafka does not drop a member for a closed connection: only its session ends it.
        assert took >= SESSION_TIMEOUT_MS / 1000 - 2 * HEARTBEAT_MS / 1000, (
            f"partitions moved {took:.1f}s after SIGKILL, before the {SESSION_TIMEOUT_MS} ms session ran out")
        produced.update(produce(bootstrap, topic, 2, 300))
        pump(survivors, tracker, covered(tracker, produced), 30, "batch 2 consumed by the survivors")
        settle(survivors, tracker)
        assert_no_loss_redelivery_only_uncommitted(produced, tracker.deliveries)
        again = [(d.member, d.partition, d.offset) for d in tracker.deliveries
                 if d.member != child.name and (d.partition, d.offset) in committed_by_child]
        assert not again, f"records the killed member had committed were redelivered: {again[:5]}"
        for p in child_partitions:
            resume = 1 + max(o for pp, o in committed_by_child if pp == p)
            taken = sorted(d.offset for d in tracker.deliveries if d.member != child.name and d.partition == p)
            assert taken and taken[0] == resume, f"partition {p}: survivors began at {taken[:3]}, committed {resume}"
    finally:
        close_all(members)


def scenario_resume_after_restart(broker: BrokerProcess, make_member, prefix: str, how: str) -> None:
    """Commit chosen offsets, then stop (SIGTERM) or kill -9 the broker and start it on the same
    data; a new member of the group resumes at exactly those offsets."""
    bootstrap = broker.bootstrap
    topic, group = new_topic(bootstrap, prefix), new_group(prefix)
    produced = produce(bootstrap, topic, 1, 60)  # 10 per partition
    want = {p: 3 + p for p in range(PARTITIONS)}  # a different resume point per partition
    tracker = Tracker()
    [first] = start_members(bootstrap, make_member, topic, group, [f"{prefix}-first"], commit=False)
    try:
        pump([first], tracker, lambda: len(tracker.deliveries) >= 60, 30, "first member reads everything")
        first.commit_offsets(want)  # returns once the commit is acknowledged
        if how == "stop":
            committed = first.committed(list(range(PARTITIONS)))
            assert committed == want, f"committed {committed}, asked for {want}"
            first.close()
            assert broker.stop() == 0, broker.log_tail()
            broker.start()
        else:
            broker.kill()
            broker.start()
            # The first member lives through the crash: it reads the commit back from the new
            # process, then leaves under the member id the broker restored from __consumer_offsets.
            committed = first.committed(list(range(PARTITIONS)))
            assert committed == want, f"committed {committed} after kill -9, asked for {want}"
            first.close()
    except BaseException:
        close_all([first])
        raise
    tracker2 = Tracker()
    [second] = start_members(bootstrap, make_member, topic, group, [f"{prefix}-second"])
    try:
        pump([second], tracker2, lambda: second.assignment() == set(range(PARTITIONS)), 40,
             "a new member gets every partition after the restart")
        rest = {v: po for v, po in produced.items() if po[1] >= want[po[0]]}
        pump([second], tracker2, covered(tracker2, rest), 30, "the new member reads from the committed offsets")
        settle([second], tracker2)
        assert_exactly_once(rest, tracker2.deliveries)
        for p in range(PARTITIONS):
            first_offset = min(d.offset for d in tracker2.deliveries if d.partition == p)
            assert first_offset == want[p], f"partition {p}: resumed at {first_offset}, committed {want[p]}"
        committed = second.committed(list(range(PARTITIONS)))
        assert committed == end_offsets(produced), f"committed {committed}, end offsets {end_offsets(produced)}"
    finally:
        close_all([second])


def stable_group_with_commits(bootstrap: str, make_member, prefix: str, count: int = 2):
    """`count` members, balanced, everything produced consumed and committed.
    Returns (topic, group, members, produced, tracker); the caller closes the members."""
    topic, group = new_topic(bootstrap, prefix), new_group(prefix)
    members = start_members(bootstrap, make_member, topic, group, [f"{prefix}-m{i}" for i in range(count)])
    tracker = Tracker()
    try:
        sizes = [PARTITIONS // count] * count
        pump(members, tracker, balanced(members, sizes), 30, f"{count} members balanced")
        produced = produce(bootstrap, topic, 1, 120)
        pump(members, tracker, covered(tracker, produced), 30, "everything consumed and committed")
        assert all(d.committed for d in tracker.deliveries), "a commit failed in a stable group"
    except BaseException:
        close_all(members)
        raise
    return topic, group, members, produced, tracker


def end_offsets(produced: dict[str, tuple[int, int]]) -> dict[int, int]:
    ends: dict[int, int] = {}
    for p, o in produced.values():
        ends[p] = max(ends.get(p, 0), o + 1)
    return ends
