"""Replica placement on a real cluster (etcd and three brokers), in both storage layouts, driven
by kafka-python's admin client: AlterPartitionReassignments, ListPartitionReassignments,
ElectLeaders.

- move: an RF=1 partition goes from broker 1 to broker 2; its batches arrive on broker 2 byte for
  byte, broker 2 leads, broker 1's copy is deleted, consumers and producers carry on.
- reorder: RF=3 replicas [1,2,3] -> [2,3,1] changes only the order (leader still 1); a preferred
  election then makes 2 the leader, a second one is ELECTION_NOT_NEEDED.
- in flight: a new replica on a stopped broker cannot catch up, so the reassignment stays listed
  (replicas old + new, adding the new); once the broker runs again it catches up into the ISR,
  the reassignment completes and the list is empty.

One cluster per storage mode serves the three scenarios, each on its own topic.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import NewTopic

from compat_tests.helpers.broker_process import STORAGE_MODES
from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(180)

PREFERRED = 0


@pytest.fixture(scope="module", params=STORAGE_MODES)
def cluster(request):
    with running_cluster(request.param) as c:
        yield c


@pytest.fixture
def admin(cluster):
    a = cluster.admin()
    yield a
    a.close()


def create(admin, cluster: Cluster, topic: str, replicas: list[int]) -> None:
    admin.create_topics([NewTopic(topic, replica_assignments={0: replicas})])
    cluster.wait_for(lambda md: md["topics"].get(topic, {}).get(0, {}).get("leader") == replicas[0],
                     f"{topic} led by {replicas[0]}")


def produce(cluster: Cluster, node: int, topic: str, batches: int, start: int = 0) -> None:
    # Metadata from any broker can name the new leader before it has taken over (Kafka's too)
    cluster.wait_led_here(topic, 0, node)
    proc = cluster.brokers[node]
    with Client(proc.host, proc.port) as c:
        for b in range(start, start + batches):
            p = c.produce(topic, 0, make_batch([b"b%03d-r%d" % (b, i) for i in range(5)]))
            assert p.error_code == 0, p


def partition_dirs(cluster: Cluster, node: int, topic: str) -> list[Path]:
    """The partition's files on one broker: <topic>-0/ (segment) or consumequeue/<topic>/0/."""
    return [p for p in cluster.brokers[node].data_dir.rglob("*")
            if p.is_dir() and (p.name == f"{topic}-0" or (p.name == "0" and p.parent.name == topic))]


def consume(cluster: Cluster, topic: str) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False,
                             request_timeout_ms=15000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        out, deadline = [], time.monotonic() + 30
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"stuck at {consumer.position(tp)} of {end}"
            for batch in consumer.poll(timeout_ms=300).values():
                out.extend(m.value for m in batch)
        return out
    finally:
        consumer.close()


def placement(md: dict, topic: str) -> tuple[int, list[int], list[int]]:
    p = md["topics"][topic][0]
    return p["leader"], p["replicas"], sorted(p["isr"])


def test_move_a_partition_to_another_broker(cluster, admin):
    topic = unique_topic("move")
    create(admin, cluster, topic, [1])
    produce(cluster, 1, topic, 20)
    before = cluster.replica_bytes(1, topic)
    assert before and partition_dirs(cluster, 1, topic) and not partition_dirs(cluster, 2, topic)

    tp = TopicPartition(topic, 0)
    assert admin.alter_partition_reassignments({tp: [2]}) == {tp: None}
    cluster.wait_for(lambda md: placement(md, topic) == (2, [2], [2]), "broker 2 the only replica and leader")

    assert cluster.replica_bytes(2, topic) == before
    wait_until(lambda: not partition_dirs(cluster, 1, topic), "broker 1's copy removed", timeout=10)
    assert partition_dirs(cluster, 2, topic)
    assert admin.list_partition_reassignments() == {}

    produce(cluster, 2, topic, 2, start=20)
    assert consume(cluster, topic) == [b"b%03d-r%d" % (b, i) for b in range(22) for i in range(5)]


def test_reorder_then_preferred_election(cluster, admin):
    topic = unique_topic("reorder")
    create(admin, cluster, topic, [1, 2, 3])
    cluster.wait_for(lambda md: placement(md, topic) == (1, [1, 2, 3], [1, 2, 3]), "a whole ISR")
    produce(cluster, 1, topic, 5)
    epoch = cluster.metadata()["topics"][topic][0]["epoch"]

    tp = TopicPartition(topic, 0)
    assert admin.alter_partition_reassignments({tp: [2, 3, 1]}) == {tp: None}
    md = cluster.wait_for(lambda md: md["topics"][topic][0]["replicas"] == [2, 3, 1], "the new order")
    assert placement(md, topic) == (1, [2, 3, 1], [1, 2, 3]) and md["topics"][topic][0]["epoch"] == epoch
    assert admin.list_partition_reassignments() == {}

    result = admin.elect_leaders(PREFERRED, {topic: [0]})
    assert [(r[0], [(p[0], p[1]) for p in r[1]]) for r in result.replica_election_results] == [(topic, [(0, 0)])]
    md = cluster.wait_for(lambda md: md["topics"][topic][0]["leader"] == 2, "2 leading")
    assert md["topics"][topic][0]["epoch"] == epoch + 1
    again = admin.elect_leaders(PREFERRED, {topic: [0]})
    assert [p[1] for p in again.replica_election_results[0][1]] == [84]  # ELECTION_NOT_NEEDED

    produce(cluster, 2, topic, 3, start=5)
    cluster.wait_for(lambda md: placement(md, topic) == (2, [2, 3, 1], [1, 2, 3]), "the ISR whole under 2")
    expected = [b"b%03d-r%d" % (b, i) for b in range(8) for i in range(5)]
    assert consume(cluster, topic) == expected
    cluster.wait_replicas_identical(topic)


def test_in_flight_reassignment_is_listed_until_the_new_replica_catches_up(cluster, admin):
    topic = unique_topic("inflight")
    create(admin, cluster, topic, [1])
    produce(cluster, 1, topic, 10)
    before = cluster.replica_bytes(1, topic)
    tp = TopicPartition(topic, 0)

    # Stop a broker that is not the controller: kafka-python sends the admin requests there.
    node = 3 if cluster.metadata()["controller"] != 3 else 2
    stopped_at = time.monotonic()
    os.kill(cluster.brokers[node].pid, signal.SIGSTOP)
    try:
        # Still registered during its session (2 s): the target is valid, but it cannot fetch.
        result = admin.alter_partition_reassignments({tp: [1, node]})
        assert result == {tp: None}, \
            f"{result} {time.monotonic() - stopped_at:.2f} s after SIGSTOP (its session may have lapsed)"
        ongoing = admin.list_partition_reassignments()
        assert ongoing == {tp: {"replicas": [1, node], "adding_replicas": [node], "removing_replicas": []}}
        assert admin.list_partition_reassignments([tp]) == ongoing
        assert placement(cluster.metadata(), topic) == (1, [1, node], [1])
    finally:
        os.kill(cluster.brokers[node].pid, signal.SIGCONT)

    cluster.wait_for(lambda md: placement(md, topic) == (1, [1, node], sorted([1, node])),
                     f"{node} caught up into the ISR", 60)
    assert admin.list_partition_reassignments() == {}
    assert cluster.replica_bytes(node, topic) == before
    cluster.wait_for(lambda md: len(md["brokers"]) == 3, f"broker {node} registered again")
