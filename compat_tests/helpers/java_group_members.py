"""Consumer-group members and admin of the Java client, each a JVM running java/GroupCheck.java.

`GroupMember` starts GroupCheck in `member` mode (subscribe with a ConsumerRebalanceListener,
poll, report the records, commitSync exactly what was polled, report the commit) and collects
its JSON-line events in a background thread; `GroupAdmin` runs GroupCheck's `admin` mode over
java_client.JavaClient's request/reply protocol. Used by test_groups_java.py, which says why
members are processes rather than threads. GROUPCHECK_LOG_JAR (see `member_command`) turns the
Java client's own logging on when a failure needs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

from kafka import KafkaProducer

from compat_tests.helpers.java_client import JavaClient, check_command

SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms
MEMBER_CONFIG = {
    "group.protocol": "classic",
    "enable.auto.commit": "false",
    "session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "heartbeat.interval.ms": "1000",
    "auto.offset.reset": "earliest",
    "max.poll.records": "20",
    "request.timeout.ms": "15000",
    "default.api.timeout.ms": "30000",
}
MEMBER_HEAP_MB = 128

# ---- the Java processes ---------------------------------------------------------------------

def member_command(main_class: str, *args: str) -> list[str]:
    """A member JVM's command line. GROUPCHECK_LOG_JAR=/path/to/slf4j-simple-2.x.jar puts an
    slf4j binding on the classpath, so the client's own log (INFO, or GROUPCHECK_LOG_LEVEL) lands
    in each JVM's stderr file: a debugging aid only, the tests never need it."""
    log_jar = os.environ.get("GROUPCHECK_LOG_JAR")
    if not log_jar:
        return check_command(main_class, *args, heap_mb=MEMBER_HEAP_MB)
    level = os.environ.get("GROUPCHECK_LOG_LEVEL", "info")
    log_options = (f"-Dorg.slf4j.simpleLogger.defaultLogLevel={level}", "-Dorg.slf4j.simpleLogger.showDateTime=true",
                   "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS")
    return check_command(main_class, *args, extra_jars=(log_jar,), heap_mb=MEMBER_HEAP_MB, jvm_options=log_options)


class GroupMember:
    """One GroupCheck member JVM; its JSON events accumulate in `events` as they arrive."""

    def __init__(self, bootstrap: str, name: str, topic: str, group: str, log_dir: Path,
                 stop_after: int | None = None, process_ms: int = 0, **config: str | None) -> None:
        self.name = name
        # a setting given as None is left out (the consumer protocol refuses session.timeout.ms)
        merged = {k: v for k, v in {**MEMBER_CONFIG, **config}.items() if v is not None}
        spec = {"name": name, "topic": topic, "group": group, "config": merged}
        if stop_after is not None:
            spec["stopAfter"] = stop_after
        if process_ms:
            spec["processMs"] = process_ms
        self.stderr_path = log_dir / f"member-{name}-stderr.txt"
        self._stderr = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(
            member_command("GroupCheck", "member", bootstrap, json.dumps(spec)),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        self.events: list[dict] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                ev = {"ev": "garbage", "line": line.decode(errors="replace")}
            with self._cond:
                self.events.append(ev)
                self._cond.notify_all()
        with self._cond:
            self.events.append({"ev": "eof", "t": int(time.time() * 1000)})
            self._cond.notify_all()

    # -- views over the events --

    def of(self, kind: str) -> list[dict]:
        with self._cond:
            return [e for e in self.events if e["ev"] == kind]

    def assignment(self) -> set[int]:
        """What the member owns now, from its listener's callbacks (eager or cooperative)."""
        owned: set[int] = set()
        with self._cond:
            for e in self.events:
                if e["ev"] == "assigned":
                    owned = set(e["assignment"])
                elif e["ev"] in ("revoked", "lost"):
                    owned -= set(e["partitions"])
        return owned

    def records(self) -> list[tuple[int, int, str]]:
        return [tuple(r) for e in self.of("records") for r in e["records"]]

    def committed(self) -> dict[int, int]:
        """The last offset each partition's commitSync confirmed (the next offset to read)."""
        out: dict[int, int] = {}
        for e in self.of("committed"):
            out.update({int(p): o for p, o in e["offsets"].items()})
        return out

    def failures(self) -> list[dict]:
        return [e for e in self.of("error") + self.of("commitFailed") + self.of("garbage")]

    # -- waiting and stopping --

    def wait_for(self, kind: str, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [e for e in self.events if e["ev"] == kind]
                if found:
                    return found[0]
                if any(e["ev"] in ("eof", "error") for e in self.events):
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        raise AssertionError(f"member {self.name}: no {kind!r} event within {timeout}s\n{self.describe()}")

    def close(self, timeout: float = 30.0) -> dict:
        """Ask for a clean close (commit, LeaveGroup); returns the 'closed' event."""
        self.proc.stdin.write(b"close\n")
        self.proc.stdin.flush()
        ev = self.wait_for("closed", timeout)
        self.proc.wait(15)
        return ev

    def kill(self) -> None:
        self.proc.kill()  # SIGKILL: no LeaveGroup, no commit, sockets dropped by the kernel
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        self._reader.join(5)
        for f in (self.proc.stdin, self.proc.stdout, self._stderr):
            try:
                f.close()
            except OSError:
                pass

    def describe(self, last: int = 25) -> str:
        with self._cond:
            evs = [dict(e, records=f"<{len(e['records'])} records>") if e["ev"] == "records" else e
                   for e in self.events[-last:]]
        stderr = self.stderr_path.read_text(errors="replace").splitlines()[-20:] if self.stderr_path.exists() else []
        return "\n".join([f"--- member {self.name} (exit {self.proc.poll()}) last events:",
                          *map(json.dumps, evs), "--- stderr tail:", *stderr])


class GroupAdmin(JavaClient):
    """GroupCheck's admin mode over JavaClient's request/reply line protocol."""

    main_class = "GroupCheck"
    main_args = ("admin",)


PARTITIONS = 6


def produce(bootstrap: str, topic: str, tag: str, count: int) -> dict[str, tuple[int, int]]:
    """`count` unique values round-robin over the partitions; value -> (partition, offset)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, client_id="compat-groups-java",
                             request_timeout_ms=15000, max_block_ms=15000)
    try:
        futures = {f"{tag}-{i}": producer.send(topic, value=f"{tag}-{i}".encode(), partition=i % PARTITIONS)
                   for i in range(count)}
        producer.flush(30)
        return {v: (md.partition, md.offset) for v, md in ((v, f.get(30)) for v, f in futures.items())}
    finally:
        producer.close()


def all_records(ms: list[GroupMember]) -> list[tuple[int, int, str]]:
    return [r for m in ms for r in m.records()]


def wait_until(check, timeout: float, what: str, ms: list[GroupMember], interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s\n" + "\n".join(m.describe() for m in ms))
        time.sleep(interval)


def wait_balanced(ms: list[GroupMember], timeout: float = 45.0) -> dict[str, set[int]]:
    """Until the members own disjoint, equal shares that cover every partition."""
    share = PARTITIONS // len(ms)

    def check():
        owned = {m.name: m.assignment() for m in ms}
        sets = list(owned.values())
        covered = set().union(*sets)
        ok = all(len(s) == share for s in sets) and covered == set(range(PARTITIONS)) \
            and sum(map(len, sets)) == PARTITIONS
        return owned if ok else None

    return wait_until(check, timeout, f"{len(ms)} members with {share} partitions each", ms)


def wait_consumed(ms: list[GroupMember], values, timeout: float = 30.0) -> None:
    want = set(values)
    wait_until(lambda: want <= {v for _, _, v in all_records(ms)}, timeout,
               f"{len(want)} produced messages consumed", ms)


def wait_committed(ms: list[GroupMember], ends: dict[int, int], timeout: float = 30.0) -> None:
    """Until the group's confirmed commits reach `ends` (partition -> next offset)."""
    def check():
        got: dict[int, int] = {}
        for m in ms:
            for p, o in m.committed().items():
                got[p] = max(got.get(p, 0), o)
        return all(got.get(p, 0) >= o for p, o in ends.items())
    wait_until(check, timeout, f"commits reaching {ends}", ms)


def end_offsets(*produced: dict[str, tuple[int, int]]) -> dict[int, int]:
    ends: dict[int, int] = {}
    for batch in produced:
        for p, o in batch.values():
            ends[p] = max(ends.get(p, 0), o + 1)
    return ends


def assert_no_failures(ms: list[GroupMember]) -> None:
    bad = {m.name: m.failures() for m in ms if m.failures()}
    assert not bad, f"members reported errors: {bad}\n" + "\n".join(m.describe() for m in ms)


def assert_exactly_once(ms: list[GroupMember], *produced: dict[str, tuple[int, int]]) -> None:
    recs = all_records(ms)
    dupes = [k for k, n in Counter((p, o) for p, o, _ in recs).items() if n > 1]
    assert not dupes, f"{len(dupes)} records delivered more than once, e.g. {sorted(dupes)[:10]}"
    want = {v: po for batch in produced for v, po in batch.items()}
    got = {v: (p, o) for p, o, v in recs}
    assert got.keys() == want.keys(), (f"missing {sorted(want.keys() - got.keys())[:10]}, "
                                       f"unexpected {sorted(got.keys() - want.keys())[:10]}")
    wrong = {v: (got[v], want[v]) for v in want if got[v] != want[v]}
    assert not wrong, f"values read at other (partition, offset) than produced: {list(wrong.items())[:5]}"


def first_offsets(m: GroupMember, since_t: int = 0) -> dict[int, int]:
    """The offset of the first record `m` got on each partition, after time `since_t`."""
    first: dict[int, int] = {}
    for e in m.of("records"):
        if e["t"] >= since_t:
            for p, o, _ in e["records"]:
                first.setdefault(p, o)
    return first


def last_assigned(m: GroupMember) -> dict:
    evs = m.of("assigned")
    assert evs, f"member {m.name} was never assigned anything\n{m.describe()}"
    return evs[-1]
