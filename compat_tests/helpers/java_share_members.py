"""Share-group members of the Java client, each a JVM running java/ShareCheck.java (KafkaShareConsumer,
explicit acknowledgement), with its JSON-line events collected in a background thread, as
java_group_members.GroupMember collects GroupCheck's; and the Java Admin's share-group calls
(java/ShareAdminCheck.java) over JavaClient's request/reply lines. Used by test_share_groups_java.py.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

from kafka import KafkaProducer

from compat_tests.helpers.java_client import JavaClient
from compat_tests.helpers.java_group_members import member_command

MEMBER_CONFIG = {"request.timeout.ms": "15000", "default.api.timeout.ms": "30000"}


class ShareMember:
    def __init__(self, bootstrap: str, name: str, topic: str, group: str, log_dir: Path,
                 actions: dict[str, str] | None = None, hold: bool = False, config: dict[str, str] | None = None
                 ) -> None:
        self.name = name
        spec = {"name": name, "topic": topic, "group": group, "config": {**MEMBER_CONFIG, **(config or {})},
                "actions": actions or {}, "hold": hold}
        self.stderr_path = log_dir / f"share-{name}-stderr.txt"
        self._stderr = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(
            member_command("ShareCheck", bootstrap, json.dumps(spec)),
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
            self.events.append({"ev": "eof"})
            self._cond.notify_all()

    def of(self, kind: str) -> list[dict]:
        with self._cond:
            return [e for e in self.events if e["ev"] == kind]

    def records(self) -> list[tuple[int, int, str, int, str]]:
        """Every record delivered: (partition, offset, value, delivery count, what it did)."""
        return [tuple(r) for e in self.of("records") + self.of("held") for r in e["records"]]

    def failures(self) -> list[dict]:
        ack_errors = [e for e in self.of("acked") if any(v is not None for v in e["errors"].values())]
        return self.of("error") + self.of("garbage") + ack_errors

    def wait_for(self, kind: str, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [e for e in self.events if e["ev"] == kind]
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0 or any(e["ev"] in ("eof", "error") for e in self.events):
                    raise AssertionError(f"member {self.name}: no {kind!r} event within {timeout}s\n"
                                         f"{self.describe()}")
                self._cond.wait(left)

    def close(self, timeout: float = 60.0) -> None:
        self.proc.stdin.write(b"close\n")
        self.proc.stdin.flush()
        self.wait_for("closed", timeout)
        self.proc.wait(15)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(5)
        for f in (self.proc.stdin, self.proc.stdout, self._stderr):
            try:
                f.close()
            except OSError:
                pass

    def describe(self, last: int = 15) -> str:
        with self._cond:
            evs = [dict(e, records=f"<{len(e['records'])} records>") if "records" in e else e
                   for e in self.events[-last:]]
        stderr = self.stderr_path.read_text(errors="replace").splitlines()[-20:] if self.stderr_path.exists() else []
        return "\n".join([f"--- share member {self.name} (exit {self.proc.poll()}) last events:",
                          *map(json.dumps, evs), "--- stderr tail:", *stderr])


class ShareAdmin(JavaClient):
    """The Java Admin's listShareGroupOffsets, alterShareGroupOffsets, deleteShareGroupOffsets,
    deleteShareGroups and describeShareGroups: ops listOffsets, alterOffsets, deleteOffsets,
    deleteGroups, describe (java/ShareAdminCheck.java says what each takes and answers)."""

    main_class = "ShareAdminCheck"


LOCK_MS = 8000


DELIVERY_LIMIT = 5


def produce(bootstrap: str, topic: str, values: list[str], one_per_batch: bool = False) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0 if one_per_batch else 20,
                             client_id="compat-share-java", request_timeout_ms=15000, max_block_ms=15000)
    try:
        for v in values:
            future = producer.send(topic, value=v.encode(), partition=0)
            if one_per_batch:
                future.get(30)
        producer.flush(30)
    finally:
        producer.close()


def wait_until(check, what: str, ms: list[ShareMember], timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s\n" + "\n".join(m.describe() for m in ms))
        time.sleep(0.1)


def accepted(ms: list[ShareMember]) -> Counter:
    return Counter(r[2] for m in ms for r in m.records() if r[4] == "accept")


def assert_no_failures(ms: list[ShareMember]) -> None:
    for m in ms:
        assert not m.failures(), m.describe()


def assert_a_released_record_is_archived_at_two_deliveries(bootstrap: str, topic: str, group: str, members) -> None:
    """A member releases "poison" each time: with the group's delivery.count.limit of 2 (the
    broker's is 5) it comes twice, then is archived and "after" follows."""
    produce(bootstrap, topic, ["poison"])
    m = members(bootstrap, "releaser", topic, group, actions={"poison": "release"})
    wait_until(lambda: sum(1 for r in m.records() if r[2] == "poison") >= 2, "poison delivered twice", [m])
    produce(bootstrap, topic, ["after"])
    wait_until(lambda: "after" in accepted([m]), "'after' accepted", [m])
    assert [r[3] for r in m.records() if r[2] == "poison"] == [1, 2], m.records()
    assert_no_failures([m])
