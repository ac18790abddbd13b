"""Group members as the scenarios drive them, and the record of what they were given.

`GroupMember` is one real subscribed consumer of some client, seen through six calls; a client
module's `make_member` builds it. Every member runs on its own: `RunningMember` in a thread of
this process, `ChildMember` in a child process (so it can be SIGKILLed) that reports JSON
lines. `pump` moves their reports into a `Tracker`, which records every delivery and whether
the commit that followed it held, so group_scenarios.py can tell a redelivery of uncommitted
work (allowed after a rebalance) from a redelivery of committed work (a bug).
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

ROOT = Path(__file__).resolve().parents[2]

Rec = tuple[int, int, bytes]  # (partition, offset, value) as a member delivers it
PARTITIONS = 6  # of every group test topic

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
        time.sleep(0.05)  # the period of taking reports during the chosen `seconds`
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
            [sys.executable, "-c", "from compat_tests.helpers.group_members import child_main; child_main()",
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
