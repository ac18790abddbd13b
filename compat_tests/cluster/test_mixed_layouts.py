"""Replicas in different layouts in one cluster, and live layout moves of a cluster's replicas.

A replica's layout is its broker's choice (broker/storage/replica_layouts.py): brokers 1 and 3
keep their replicas in segments, broker 2 in its commitlog, unless a topic names its
storage.mode. Replication ships logical batches, so every replica holds the same batches at
the same offsets whatever its layout:

- each broker is killed (SIGKILL) in turn and restarted under an idempotent acks=all producer;
  every acknowledged record is then in every replica once, in order, at its offset, and each
  broker's DescribeLogDirs still shows its own layout;
- AlterReplicaLogDirs sent to the leader and to a follower (as Kafka's Admin sends it, to the
  broker holding the replica) moves each one's replica to its other layout while the producer
  and a consumer carry on; then the leader is killed and the moved follower, and later the
  moved leader, hold every acknowledged record.
"""

from __future__ import annotations

from collections import Counter

import pytest
from confluent_kafka import Consumer, TopicPartition

from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.log_dirs import NONE, IdempotentLoad, dir_of, files_of, other, placement, prefill
from compat_tests.helpers.raw_kafka import Client, read_records
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(420)

MODES = ("segment", "commitlog", "segment")  # nodes 1, 2, 3
REPLICA_NOT_AVAILABLE = 9
PAUSE_S = 0.002  # the producer's pace: ~300 records/s on this machine, a few hundred KB/s


@pytest.fixture(scope="module")
def mixed():
    with running_cluster(MODES) as cluster:
        yield cluster


def isr_whole(topic: str):
    return lambda md: len(md["topics"][topic][0]["isr"]) == 3


def layouts(proc, topic: str) -> dict[str, bool]:
    """layout -> is_future, of partition 0 of `topic` as this broker's DescribeLogDirs lists it."""
    with Client(proc.host, proc.port) as c:
        where = placement(c, topic)
    by_dir = {dir_of(proc, mode): mode for mode in ("segment", "commitlog")}
    return {by_dir[path]: future for path, future in where}


def replica_records(cluster: Cluster, node: int, topic: str) -> list[tuple[int, bytes]]:
    return [(o, v) for o, _t, _k, v in read_records(cluster.replica_bytes(node, topic))]


def assert_every_acked_once(records: list[tuple[int, bytes]], acked: list[tuple[int, bytes]], who: str) -> None:
    offsets = [o for o, _ in records]
    assert offsets == list(range(len(offsets))), f"{who}: offsets not contiguous from 0"
    at = dict(records)
    missing = [o for o, v in acked if at.get(o) != v]
    assert not missing, f"{who}: {len(missing)} acknowledged records not at their offsets, e.g. {missing[:3]}"
    counts = Counter(v for _, v in records)  # the producer's values are unique (the prefill's are not)
    twice = [o for o, v in acked if counts[v] != 1]
    assert not twice, f"{who}: {len(twice)} acknowledged records stored more than once, e.g. {twice[:3]}"


def alter_replica_log_dirs(cluster: Cluster, wanted: dict[int, tuple[str, str]]) -> dict[int, int]:
    """Kafka's Admin call (kafka-python's, as the Java one: one request per broker named):
    node -> (topic, log dir) for partition 0; node -> the error code it answered."""
    admin = cluster.admin()
    try:
        answers = admin.alter_replica_log_dirs({(topic, 0, node): path for node, (topic, path) in wanted.items()})
    finally:
        admin.close()
    return {tpr.broker_id: error.errno for tpr, error in answers.items()}


def wait_replicas_identical(cluster: Cluster, topic: str) -> None:
    def identical() -> bool:
        return len({cluster.replica_bytes(node, topic) for node in cluster.brokers}) == 1
    wait_until(identical, "every replica holding the same batches", timeout=60)


def test_each_broker_holds_its_own_layout_and_loses_nothing_killed_in_turn(mixed):
    topic, named = unique_topic("mixed"), unique_topic("mixed-named")
    mixed.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
    mixed.create_topic(named, 1, 3, {"storage.mode": "commitlog"})
    for node, proc in mixed.brokers.items():
        assert layouts(proc, topic) == {MODES[node - 1]: False}, f"broker {node}"
        assert layouts(proc, named) == {"commitlog": False}, f"broker {node}: the topic's storage.mode rules"
    load = IdempotentLoad(mixed.bootstrap, topic, "mixed", pause_s=PAUSE_S)
    try:
        wait_until(lambda: load.count() > 200, "acks before the first kill", timeout=60)
        for node, proc in mixed.brokers.items():
            proc.kill()
            mixed.wait_for(lambda md: node not in md["topics"][topic][0]["isr"]
                           and md["topics"][topic][0]["leader"] not in (node, -1), f"broker {node} out of the ISR")
            acked = load.count()
            wait_until(lambda: load.count() > acked + 200, f"acks without broker {node}", timeout=90)
            proc.start()
            mixed.wait_for(isr_whole(topic), f"broker {node} back in the ISR", timeout=90)
    finally:
        acked = load.finish()
    wait_replicas_identical(mixed, topic)
    for node, proc in mixed.brokers.items():
        assert_every_acked_once(replica_records(mixed, node, topic), acked, f"broker {node} ({MODES[node - 1]})")
        assert layouts(proc, topic) == {MODES[node - 1]: False}, f"broker {node} after its restart"
        assert files_of(proc, topic) == {MODES[node - 1]: True, other(MODES[node - 1]): False}


def test_alter_replica_log_dirs_moves_a_leader_and_a_follower_under_load(mixed):
    topic = unique_topic("mixed-move")
    mixed.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
    leader = mixed.leader(topic)
    # The follower in the other layout than the leader's: the two moves go opposite ways.
    follower = next(n for n in mixed.brokers if n != leader and (MODES[n - 1] != MODES[leader - 1] or leader == 2))
    moves = {leader: other(MODES[leader - 1]), follower: other(MODES[follower - 1])}
    with Client(mixed.brokers[leader].host, mixed.brokers[leader].port) as c:
        prefill(c, topic, 20)  # the moves have a catch-up to run before they can swap
    mixed.wait_for(isr_whole(topic), "the followers caught up with the prefill", timeout=90)
    load = IdempotentLoad(mixed.bootstrap, topic, "move", pause_s=PAUSE_S)
    consumer = Consumer({"bootstrap.servers": mixed.bootstrap, "group.id": topic, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "log_level": 2})
    consumer.assign([TopicPartition(topic, 0, 0)])
    consumed: list[int] = []

    def consume() -> None:  # a bounded helping: the moves are watched between two
        consumed.extend(m.offset() for m in consumer.consume(500, 0.05) if m.error() is None)

    try:
        wait_until(lambda: load.count() > 200, "acks before the moves", timeout=60)
        before = load.count()
        since = {node: mixed.brokers[node].log_size() for node in moves}
        assert alter_replica_log_dirs(mixed, {node: (topic, dir_of(mixed.brokers[node], target))
                                              for node, target in moves.items()}) == {node: NONE for node in moves}

        def moved() -> bool:
            consume()
            return all(layouts(mixed.brokers[node], topic) == {target: False} for node, target in moves.items())
        wait_until(moved, "both replicas in their new layouts alone", timeout=180)
        # Each through a future log that caught up and swapped in (a quiet machine moves the
        # prefill in ~60 ms, too fast for DescribeLogDirs polls to see the future replica:
        # test_alter_replica_log_dirs.py checks that on a bigger move)
        for node, target in moves.items():
            text = mixed.brokers[node].log_text(since[node])
            assert f"moving {topic}-0 from the" in text and f"moved {topic}-0 to the {target} layout" in text, node
        assert load.count() > before, "no produce was acknowledged during the moves"
        mixed.brokers[leader].kill()
        mixed.wait_for(lambda md: md["topics"][topic][0]["leader"] not in (leader, -1), "a new leader")
        acked = load.count()
        wait_until(lambda: (consume(), load.count() > acked + 200)[1], "acks after the leader's death", timeout=90)
    finally:
        acked = load.finish()
    wait_until(lambda: (consume(), bool(consumed) and consumed[-1] >= acked[-1][0])[1],
               "the consumer at the last acknowledged offset", timeout=90)
    consumer.close()
    assert consumed == sorted(set(consumed)) and consumed[0] == 0, "consumed out of order or twice"
    assert_every_acked_once(replica_records(mixed, follower, topic), acked, f"moved follower {follower}")
    wait_until(lambda: files_of(mixed.brokers[follower], topic) == {moves[follower]: True,
                                                                     MODES[follower - 1]: False},
               "the follower's old layout removed")
    mixed.brokers[leader].start()  # it restarts in the layout it moved to
    mixed.wait_for(isr_whole(topic), "the old leader back in the ISR", timeout=90)
    assert layouts(mixed.brokers[leader], topic) == {moves[leader]: False}
    wait_replicas_identical(mixed, topic)
    assert_every_acked_once(replica_records(mixed, leader, topic), acked, f"moved old leader {leader}")


def test_a_replica_not_hosted_here_is_not_available(mixed):
    topic = unique_topic("mixed-one")
    mixed.create_topic(topic, 1, 1)
    (holder,) = mixed.metadata()["topics"][topic][0]["replicas"]
    elsewhere = next(n for n in mixed.brokers if n != holder)
    assert alter_replica_log_dirs(mixed, {elsewhere: (topic, dir_of(mixed.brokers[elsewhere], "commitlog"))}) == \
        {elsewhere: REPLICA_NOT_AVAILABLE}
