"""Consumer groups on a real cluster (issue 14 item 5): etcd and three brokers, both layouts.

The coordinator of a group is the leader of the group's `__consumer_offsets` partition. Three
members consume a topic with replication factor 3 and commit after every poll — kafka-python
members of a classic group, or confluent-kafka members with `group.protocol=consumer`
(KIP-848, whose group state the new leader replays from the same partition) — and the broker
FindCoordinator names is SIGKILLed while they run. Then:

- FindCoordinator names the new leader of that offsets partition, which loaded the group:
  its committed offsets are what they were before the kill (commits are acks=all, so the new
  leader has every acknowledged one);
- the members carry on: every record produced, before and after the kill, is delivered, and
  none that was delivered and committed is delivered again;
- a monitor reading the committed offsets from whichever broker coordinates, every 100 ms,
  never sees one go back;
- once the killed broker is back, exactly one broker coordinates the group: the others
  answer NOT_COORDINATOR.

Brokers use a 2 s etcd session (compat_tests/helpers/cluster.py), 3 offsets partitions, a 1 s
initial rebalance delay (classic) and a 1 s consumer-group heartbeat (KIP-848: partitions move
between members at heartbeats).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from kafka import KafkaProducer

from broker.groups import offsets_log
from compat_tests.helpers import confluent_consumer_protocol_members, kafka_python_group_members
from compat_tests.helpers.broker_process import STORAGE_MODES
from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.group_members import (
    PARTITIONS, RunningMember, Tracker, balanced, close_all, covered, pump, settle)
from compat_tests.helpers.group_requests import find_coordinator
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(120)

OFFSETS_PARTITIONS = 3
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS = 16, 14
PER_BATCH = 120


@pytest.fixture(params=STORAGE_MODES)
def cluster(request):
    # A second of initial rebalance delay lets the three members form one generation: every
    # extra rebalance is a chance for kafka-python 3.0.12 to drop a SyncGroup answer it got
    # (seen 1 run in ~10 with no delay: the member never takes its assignment nor heartbeats).
    with running_cluster(request.param, extra_args=("--offsets-topic-partitions", str(OFFSETS_PARTITIONS),
                                                    "--group-initial-rebalance-delay-ms", "1000",
                                                    "--group-consumer-heartbeat-interval-ms", "1000",
                                                    "--group-consumer-min-heartbeat-interval-ms", "1000")) as c:
        yield c


def committed(cluster: Cluster, node: int, group: str, topic: str) -> tuple[int, dict[int, int]]:
    """(error code, {partition: committed offset}) from OffsetFetch v7 to one broker."""
    proc = cluster.brokers[node]
    with Client(proc.host, proc.port, timeout=3) as c:
        r = c.request(9, 7, group_id=group, require_stable=False,
                      topics=[{"name": topic, "partition_indexes": list(range(PARTITIONS))}])
    return r.error_code, {p.partition_index: p.committed_offset for t in r.topics for p in t.partitions}


class CommitMonitor:
    """Reads the group's committed offsets from its current coordinator every 100 ms and
    records any that went back."""

    def __init__(self, cluster: Cluster, group: str, topic: str) -> None:
        self._cluster, self._group, self._topic = cluster, group, topic
        self.latest: dict[int, int] = {}
        self.went_back: list[tuple[int, int, int]] = []
        self.reads = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            node = find_coordinator(self._cluster, self._group)
            if node is None or not self._cluster.brokers[node].is_running():
                continue
            try:
                code, offsets = committed(self._cluster, node, self._group, self._topic)
            except OSError:
                continue
            if code != 0:
                continue
            self.reads += 1
            for p, offset in offsets.items():
                if offset < self.latest.get(p, -1):
                    self.went_back.append((p, self.latest[p], offset))
                self.latest[p] = max(offset, self.latest.get(p, -1))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def produce(bootstrap: str, topic: str, batch: str) -> list[str]:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=10, request_timeout_ms=10000)
    values = [f"{batch}-{i}" for i in range(PER_BATCH)]
    for i, v in enumerate(values):
        producer.send(topic, v.encode(), partition=i % PARTITIONS)
    producer.flush(30)
    producer.close()
    return values


def end_offsets(cluster: Cluster, topic: str) -> dict[int, int]:
    leaders = cluster.metadata()["topics"][topic]
    out = {}
    for p in range(PARTITIONS):
        proc = cluster.brokers[leaders[p]["leader"]]
        with Client(proc.host, proc.port) as c:
            out[p] = c.log_end_offset(topic, p)
    return out


def wait_until_committed(cluster: Cluster, node: int, group: str, topic: str, offsets: dict[int, int]) -> dict:
    """The members commit after every poll: wait until what they consumed is committed."""
    got = wait_until(lambda: (answer := committed(cluster, node, group, topic)) == (0, offsets) and answer,
                     f"committed offsets at the log ends {offsets}", timeout=10)
    return got[1]


MEMBERS = {"classic": kafka_python_group_members.make_member,
           "consumer": confluent_consumer_protocol_members.make_member}


@pytest.mark.parametrize("protocol", sorted(MEMBERS))
def test_group_moves_with_its_offsets_partition_when_the_coordinator_is_killed(cluster, protocol):
    topic, group = unique_topic("cg"), f"cg-{uuid.uuid4().hex[:8]}"
    make_member = MEMBERS[protocol]
    cluster.create_topic(topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
    first = produce(cluster.bootstrap, topic, "a")
    tracker = Tracker()
    members = [RunningMember(make_member(cluster.bootstrap, topic, group, f"m{i}")) for i in range(3)]
    monitor = None
    try:
        pump(members, tracker, lambda: balanced(members, [2, 2, 2])() and covered(tracker, first)(), 30,
             "three members consumed and committed the first batch")
        old = find_coordinator(cluster, group)
        offsets_partition = offsets_log.partition_for(group, OFFSETS_PARTITIONS)
        assert old == cluster.leader(offsets_log.TOPIC, offsets_partition)
        before = wait_until_committed(cluster, old, group, topic, end_offsets(cluster, topic))
        monitor = CommitMonitor(cluster, group, topic)

        killed_at = time.monotonic()
        cluster.brokers[old].kill()
        md = cluster.wait_for(lambda md: md["topics"][offsets_log.TOPIC][offsets_partition]["leader"] not in (old, -1),
                              "a new leader of the group's offsets partition")
        new = md["topics"][offsets_log.TOPIC][offsets_partition]["leader"]
        deadline = time.monotonic() + 15
        wait_until(lambda: find_coordinator(cluster, group) == new, "FindCoordinator naming the new leader",
                   timeout=15)
        moved_s = time.monotonic() - killed_at
        # Another broker's FindCoordinator may name `new` before `new` has applied its leadership
        # and loaded the partition: it answers NOT_COORDINATOR until then, and a client retries.
        def taken_over() -> tuple | None:
            answer = committed(cluster, new, group, topic)
            return None if answer[0] in (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) else answer

        code, after = wait_until(taken_over, f"broker {new} taking the group over", timeout=deadline - time.monotonic())
        assert code == 0 and after == before, f"committed offsets at the new coordinator {after}, were {before}"

        second = produce(cluster.bootstrap, topic, "b")
        pump(members, tracker, covered(tracker, first + second), 40, "the second batch consumed and committed")
        settle(members, tracker, 1.0)
        final = end_offsets(cluster, topic)
        wait_until(lambda: monitor.latest == final, f"committed offsets at the log ends {final}", timeout=10)
        monitor.stop()

        assert set(first + second) <= tracker.values()
        committed_twice = [d for d in tracker.deliveries if d.committed
                           and sum(1 for e in tracker.deliveries if e.value == d.value) > 1]
        assert not committed_twice, f"committed records delivered again: {committed_twice[:5]}"
        assert monitor.reads > 10 and not monitor.went_back, monitor.went_back

        cluster.brokers[old].start()  # back as a follower of the offsets partition
        cluster.wait_for(lambda md: len(md["brokers"]) == 3 and
                         len(md["topics"][offsets_log.TOPIC][offsets_partition]["isr"]) == 3, "the ISR whole")
        now = find_coordinator(cluster, group)
        answers = {node: committed(cluster, node, group, topic) for node in cluster.brokers}
        assert answers[now] == (0, final)
        assert all(code == NOT_COORDINATOR for node, (code, _) in answers.items() if node != now), answers
        print(f"coordinator {old} killed; {new} coordinates after {moved_s:.2f} s; {tracker.summary()}")
    finally:
        if monitor is not None:
            monitor.stop()
        close_all(members)
