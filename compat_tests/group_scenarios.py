"""Consumer-group scenarios shared by the three client modules (test_groups_*.py).

Each client module supplies a `make_member(bootstrap, topic, group, name)` that returns a
`GroupMember`: one real subscribed consumer of that client, seen through six calls (poll,
assignment, commit, commit_offsets, committed, close). Every member polls in a thread of its
own (`RunningMember`) and commits synchronously after every poll that returned records; the
test thread takes in what each member reports (`pump`) and records every delivery in a
`Tracker`, so the checks can tell a redelivery of uncommitted work (allowed after a
rebalance) from a redelivery of committed work (a bug) or a lost record.

Records are produced by kafka-python with explicit partitions (value `b<batch>-<i>` to
partition i % 6), so every partition has work and each value is unique. A member that must be
killed with SIGKILL runs in a child process (`ChildMember`, entry point `child_main`), built by
the same client module's `make_member` and reporting assignment, deliveries and commit
results as JSON lines.
"""

from __future__ import annotations

import importlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from kafka import KafkaProducer

from compat_tests.broker_process import BrokerProcess
from compat_tests.topics import create_topic, unique_topic

ROOT = Path(__file__).resolve().parent.parent
PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms
HEARTBEAT_MS = 1000
# A new group waits this long for more members instead of the default 3 s; fewer partitions
# of __consumer_offsets than the default 50 make its creation cheap.
GROUP_BROKER_ARGS = ("--group-initial-rebalance-delay-ms", "300", "--offsets-topic-partitions", "3")

Rec = tuple[int, int, bytes]  # (partition, offset, value) as a member delivers it


@pytest.fixture(scope="module")
def _module_broker(storage_mode):
    """Overrides conftest's shared broker for a module that imports it: same, plus GROUP_BROKER_ARGS."""
    proc = BrokerProcess(storage_mode=storage_mode, extra_args=list(GROUP_BROKER_ARGS))
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


def new_group(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def new_topic(bootstrap: str, prefix: str) -> str:
    return create_topic(bootstrap, unique_topic(prefix), PARTITIONS)


class GroupMember:
    """One subscribed consumer of the client under test (interface the client modules fill in)."""

    name: str

    def poll(self, timeout_s: float) -> list[Rec]:
        raise NotImplementedError

    def assignment(self) -> set[int]:
        raise NotImplementedError

    def commit(self) -> bool:
        """Synchronously commit the positions of everything delivered; False if the broker refused."""
        raise NotImplementedError

    def commit_offsets(self, offsets: dict[int, int]) -> None:
        raise NotImplementedError

    def committed(self, partitions: list[int]) -> dict[int, int | None]:
        raise NotImplementedError

    def close(self) -> None:
        """Clean close: the client sends LeaveGroup."""
        raise NotImplementedError


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


# --- what was delivered ----------------------------------------------------------------------

@dataclass
class Delivery:
    member: str
    partition: int
    offset: int
    value: str
    committed: bool | None = None  # None: no commit attempted since; False: that commit failed


class Tracker:
    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        self._pending: dict[str, list[Delivery]] = defaultdict(list)

    def delivered(self, member: str, recs) -> None:
        for p, o, v in recs:
            d = Delivery(member, p, o, v.decode() if isinstance(v, bytes) else v)
            self.deliveries.append(d)
            self._pending[member].append(d)

    def commit_result(self, member: str, ok: bool) -> None:
        # Conservative: a delivery whose own commit failed stays "uncommitted" even if a later
        # commit covered it, so a redelivery is never blamed wrongly.
        for d in self._pending.pop(member, []):
            d.committed = ok

    def values(self) -> set[str]:
        return {d.value for d in self.deliveries}

    def of(self, member: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.member == member]

    def summary(self) -> str:
        per = Counter(d.member for d in self.deliveries)
        return f"{len(self.deliveries)} deliveries, {len(self.values())} distinct, per member {dict(per)}"


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


# --- driving members ---------------------------------------------------------------------------

def member_loop(member: GroupMember, report: Callable[[dict], None], commit: bool,
                calls: "queue.Queue | None" = None, deadline: float | None = None) -> None:
    """What every member does, in its own thread or process: poll, report what it was given,
    commit it, report whether the commit held. `calls` brings (function, reply-queue) pairs to
    run on the member between polls (a client's consumer belongs to one thread); a function
    marked `last` ends the loop."""
    last = None
    while deadline is None or time.monotonic() < deadline:
        while calls is not None and not calls.empty():
            fn, reply = calls.get_nowait()
            try:
                reply.put((True, fn(member)))
            except BaseException as exc:  # handed to the caller, who raises it
                reply.put((False, exc))
            if getattr(fn, "last", False):
                return
        recs = member.poll(0.1)
        now = sorted(member.assignment())
        if now != last:
            report({"a": now})
            last = now
        if recs:
            # Reported before the commit: whatever the commit covers is already reported.
            report({"e": [[p, o, v.decode()] for p, o, v in recs]})
            if commit:
                report({"c": member.commit()})


class _Reporting:
    """A member that runs on its own and reports; `drain` moves its reports into a Tracker."""

    name: str
    _assignment: set[int]
    _reports: queue.Queue

    def _apply(self, msg: dict, tracker: Tracker) -> None:
        if "a" in msg:
            self._assignment = set(msg["a"])
        if "e" in msg:
            tracker.delivered(self.name, [tuple(r) for r in msg["e"]])
        if "c" in msg:
            tracker.commit_result(self.name, msg["c"])

    def drain(self, tracker: Tracker) -> None:
        while True:
            try:
                msg = self._reports.get_nowait()
            except queue.Empty:
                return
            self._apply(msg if isinstance(msg, dict) else json.loads(msg), tracker)

    def assignment(self) -> set[int]:
        return self._assignment


class RunningMember(_Reporting):
    """A GroupMember polled continuously by a thread of its own. Round-robin polling from one
    thread does not work for every client: kafka-python 3.0.12 throws away a JoinGroup/SyncGroup
    that completes while no poll() waits for it and joins again (BaseCoordinator.join_group_async
    re-sends when `_join_task.is_done`), so short alternating polls rebalance forever."""

    def __init__(self, member: GroupMember, commit: bool = True) -> None:
        self.name, self.member = member.name, member
        self._assignment: set[int] = set()
        self._reports: queue.Queue = queue.Queue()
        self._calls: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(commit,), name=f"member-{self.name}", daemon=True)
        self._thread.start()

    def _run(self, commit: bool) -> None:
        try:
            member_loop(self.member, self._reports.put, commit, self._calls)
        except BaseException as exc:
            self._error = exc

    def drain(self, tracker: Tracker) -> None:
        super().drain(tracker)
        if self._error is not None:
            raise AssertionError(f"member {self.name} failed in its poll loop: {self._error!r}") from self._error

    def call(self, fn: Callable[[GroupMember], object], timeout: float = 30.0):
        """Run fn(member) on the member's own thread, between two polls."""
        if not self._thread.is_alive():
            raise AssertionError(f"member {self.name} is not running ({self._error!r})")
        reply: queue.Queue = queue.Queue()
        self._calls.put((fn, reply))
        ok, value = reply.get(timeout=timeout)
        if not ok:
            raise value
        return value

    def committed(self, partitions: list[int]) -> dict[int, int | None]:
        return self.call(lambda m: m.committed(partitions))

    def commit_offsets(self, offsets: dict[int, int]) -> None:
        self.call(lambda m: m.commit_offsets(offsets))

    def close(self) -> None:
        """Clean close (LeaveGroup) on the member's thread, which then ends."""
        if not self._thread.is_alive():
            return
        def close(m):
            m.close()
        close.last = True
        self.call(close)
        self._thread.join(10)
        self._assignment = set()


def pump(members: list, tracker: Tracker, until: Callable[[], bool], timeout: float, what: str) -> float:
    """Take in every member's reports until `until()`; returns the seconds it took."""
    start = time.monotonic()
    deadline = start + timeout
    while True:
        for m in members:
            m.drain(tracker)
        if until():
            return time.monotonic() - start
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what}: not reached within {timeout}s; assignments "
                f"{ {m.name: sorted(m.assignment()) for m in members} }; {tracker.summary()}")
        time.sleep(0.05)


def settle(members: list, tracker: Tracker, seconds: float = 1.0) -> None:
    """Keep taking reports a little longer: anything delivered now beyond what was expected is a
    duplicate (or a record never produced)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for m in members:
            m.drain(tracker)
        time.sleep(0.05)
    for m in members:
        m.drain(tracker)


def balanced(members: list, sizes: list[int]) -> Callable[[], bool]:
    """Assignments are disjoint, cover all partitions and have these sizes (in any order)."""
    def check() -> bool:
        got = [m.assignment() for m in members]
        union = set().union(*got)
        return (sorted(len(a) for a in got) == sorted(sizes) and union == set(range(PARTITIONS))
                and sum(len(a) for a in got) == PARTITIONS)
    return check


def covered(tracker: Tracker, values, committed: bool = True) -> Callable[[], bool]:
    """Every one of `values` delivered and (if `committed`) every commit attempt reported."""
    wanted = set(values)
    return lambda: wanted <= tracker.values() and (
        not committed or all(d.committed is not None for d in tracker.deliveries))


def close_all(members: list) -> None:
    for m in members:
        try:
            m.kill() if isinstance(m, ChildMember) else m.close()
        except Exception:  # cleanup after a failure must not hide it
            pass


# --- a member in a child process, for SIGKILL --------------------------------------------------

class ChildMember(_Reporting):
    """A member run by `child_main` in its own process; its reports are JSON lines on stdout."""

    def __init__(self, factory: str, bootstrap: str, topic: str, group: str, name: str,
                 lifetime_s: float = 120.0) -> None:
        self.name = name
        self._assignment: set[int] = set()
        self._reports: queue.Queue = queue.Queue()
        self.stderr_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"{name}-{uuid.uuid4().hex[:6]}.log"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from compat_tests.group_scenarios import child_main; child_main()",
             factory, bootstrap, topic, group, name, str(lifetime_s)],
            cwd=str(ROOT), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._reports.put(line.decode())

    def drain(self, tracker: Tracker) -> None:
        if self.proc.poll() is not None and self.proc.returncode != -signal.SIGKILL:
            raise AssertionError(f"child member {self.name} exited with {self.proc.returncode}: "
                                 f"{self.stderr_path.read_text(errors='replace')[-3000:]}")
        super().drain(tracker)

    def kill(self, tracker: Tracker | None = None) -> None:
        """SIGKILL; then take in every report it wrote before dying."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._reader.join(10)
        if tracker is not None:
            self.drain(tracker)
        self._assignment = set()
        self._stderr.close()
        self.stderr_path.unlink(missing_ok=True)


def child_main() -> None:
    """argv: factory ("module:function"), bootstrap, topic, group, name, lifetime seconds."""
    factory, bootstrap, topic, group, name, lifetime = sys.argv[1:7]
    module, func = factory.split(":")
    member = getattr(importlib.import_module(module), func)(bootstrap, topic, group, name)

    def report(msg: dict) -> None:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()

    # An orphan never outlives its test for long.
    member_loop(member, report, commit=True, deadline=time.monotonic() + float(lifetime))
    member.close()


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
