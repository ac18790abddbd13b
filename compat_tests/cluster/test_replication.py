"""Replication scenarios on a real cluster: etcd and three brokers, in both storage layouts.

Kafka's promise, checked with exact contents: with replication factor 3,
min.insync.replicas=2 and acks=all, an acknowledged record survives the loss of any one
broker, and a consumer never reads a record that can later disappear.

- failover: SIGKILL the leader under an idempotent acks=all producer; every acknowledged
  record is there exactly once, in order; the old leader rejoins the ISR and every replica
  holds the same bytes.
- divergence: the leader takes acks=1 records its (stopped) followers never fetched and dies;
  the new leader's epoch wins, the old leader cuts its tail (OffsetForLeaderEpoch) when it
  returns, and no consumer ever saw the cut records (they were above the high watermark).
- ISR: a stopped follower leaves the ISR and acks=all goes on; with the second one stopped
  too, acks=all is refused with NOT_ENOUGH_REPLICAS while acks=1 works; both come back.
- rolling restart of all three brokers under acks=all load: nothing acknowledged is lost.
- etcd stopped (SIGSTOP): once their sessions lapse the leader, its whole ISR still fetching,
  goes on acknowledging acks=all, as Kafka's leaders while the controller quorum is away;
  nothing acknowledged is lost once etcd is back.

Brokers use a 2 s etcd session and a 2 s replica lag time (compat_tests/helpers/cluster.py).
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaConsumer, TopicPartition

from compat_tests.helpers.broker_process import STORAGE_MODES
from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(params=STORAGE_MODES)
def cluster(request):
    with running_cluster(request.param) as c:
        yield c


class Load:
    """An idempotent acks=all producer sending numbered records until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "message.timeout.ms": 60000})
        self.topic = topic
        self.acked: list[bytes] = []
        self.errors: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err, msg) -> None:
        (self.errors if err else self.acked).append(err or msg.value())

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            self.producer.produce(self.topic, value=b"r%07d" % i, partition=0, on_delivery=self._delivered)
            i += 1
            self.producer.poll(0)
            time.sleep(0.002)  # pacing: a steady load through the scenario
        self.producer.flush(60)

    def wait_for_acks(self, n: int, timeout: float = 30.0) -> None:
        wait_until(lambda: len(self.acked) >= n, f"{n} acknowledged records ({self.errors[:3]} failed)", timeout)

    def __enter__(self) -> "Load":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(90)


def consume_all(bootstrap: str, topic: str, timeout: float = 30.0) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, check_crcs=True,
                             request_timeout_ms=15000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        out, deadline = [], time.monotonic() + timeout
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"stuck at {consumer.position(tp)} of {end}"
            for batch in consumer.poll(timeout_ms=300).values():
                out.extend(m.value for m in batch)
        return out
    finally:
        consumer.close()


def assert_replicas_identical(cluster: Cluster, topic: str) -> bytes:
    return cluster.wait_replicas_identical(topic)


def isr_whole(topic: str):
    return lambda md: len(md["topics"][topic][0]["isr"]) == 3


def signal_broker(cluster: Cluster, node: int, sig: int) -> None:
    os.kill(cluster.brokers[node].pid, sig)


def test_leader_failover_loses_no_acknowledged_record(cluster):
    topic = unique_topic("failover")
    cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
    with Load(cluster.bootstrap, topic) as load:
        load.wait_for_acks(200)
        leader = cluster.leader(topic)
        cluster.brokers[leader].kill()
        md = cluster.wait_for(lambda md: md["topics"][topic][0]["leader"] not in (leader, -1), "a new leader")
        assert leader not in md["topics"][topic][0]["isr"]
        load.wait_for_acks(len(load.acked) + 200)  # the producer carries on against the new leader
        cluster.brokers[leader].start()
        cluster.wait_for(isr_whole(topic), "the old leader back in the ISR")
    assert not load.errors, load.errors[:3]
    assert len(load.acked) >= 400
    consumed = consume_all(cluster.bootstrap, topic)
    assert consumed == sorted(consumed), "records out of order"
    assert len(consumed) == len(set(consumed)), "a record was stored twice"
    assert set(load.acked) <= set(consumed), f"{len(set(load.acked) - set(consumed))} acknowledged records lost"
    assert_replicas_identical(cluster, topic)


def test_divergent_tail_is_truncated_and_never_seen(cluster):
    topic = unique_topic("diverge")
    cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
    leader = cluster.leader(topic)
    followers = [n for n in cluster.brokers if n != leader]
    lp = cluster.brokers[leader]
    with Client(lp.host, lp.port) as c:
        for i in range(5):
            assert c.produce(topic, 0, make_batch([b"base%d" % i]), acks=-1).error_code == 0
        for n in followers:
            signal_broker(cluster, n, signal.SIGSTOP)
        # A follower's fetch parked on the leader (max wait 500 ms) would carry the next
        # append to its socket: let those parked fetches time out first.
        time.sleep(0.7)
        try:
            for i in range(3):  # acks=1: the leader alone has them
                p = c.produce(topic, 0, make_batch([b"lost%d" % i]), acks=1)
                assert p.error_code == 0 and p.base_offset == 5 + i
            seen = c.fetch(topic, 0, 5)
            assert seen.high_watermark == 5 and not seen.records, "a consumer could read above the HW"
        finally:
            lp.kill()
            for n in followers:
                signal_broker(cluster, n, signal.SIGCONT)
    md = cluster.wait_for(lambda md: md["topics"][topic][0]["leader"] in followers, "a follower elected")
    new_leader = md["topics"][topic][0]["leader"]
    np_ = cluster.brokers[new_leader]
    with Client(np_.host, np_.port) as c:
        for i in range(2):
            assert c.produce(topic, 0, make_batch([b"after%d" % i]), acks=-1).error_code == 0
    lp.start()
    cluster.wait_for(isr_whole(topic), "the old leader back in the ISR")
    consumed = consume_all(cluster.bootstrap, topic)
    assert consumed == [b"base%d" % i for i in range(5)] + [b"after0", b"after1"]
    assert_replicas_identical(cluster, topic)
    assert "truncat" in lp.log_text().lower(), "the old leader did not say it cut its tail"


def _produce_once(bootstrap: str, topic: str, acks: str, retries: int = 0):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": False,
                         "retries": retries, "retry.backoff.ms": 250, "message.timeout.ms": 15000})
    outcome = []
    producer.produce(topic, value=b"x", partition=0, on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(20)
    return outcome[0]


def test_isr_shrinks_and_min_insync_refuses_acks_all(cluster):
    topic = unique_topic("isr")
    cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
    leader = cluster.leader(topic)
    first, second = [n for n in cluster.brokers if n != leader]
    bootstrap = cluster.brokers[leader].bootstrap
    signal_broker(cluster, first, signal.SIGSTOP)
    try:
        cluster.wait_for(lambda md: sorted(md["topics"][topic][0]["isr"]) == sorted([leader, second]),
                         "the stopped follower out of the ISR")
        # retries: on two busy cores the follower still in sync can fall behind for a moment
        err = _produce_once(bootstrap, topic, "all", retries=20)
        assert err is None, f"acks=all failed with one follower in sync: {err}"
        signal_broker(cluster, second, signal.SIGSTOP)
        try:
            cluster.wait_for(lambda md: md["topics"][topic][0]["isr"] == [leader], "the ISR down to the leader")
            err = _produce_once(bootstrap, topic, "all")
            assert err is not None and err.code() == KafkaError.NOT_ENOUGH_REPLICAS, err
            assert _produce_once(bootstrap, topic, "1") is None, "acks=1 refused"
        finally:
            signal_broker(cluster, second, signal.SIGCONT)
    finally:
        signal_broker(cluster, first, signal.SIGCONT)
    cluster.wait_for(isr_whole(topic), "both followers back in the ISR", timeout=40)
    assert _produce_once(bootstrap, topic, "all", retries=20) is None
    assert_replicas_identical(cluster, topic)


def test_rolling_restart_under_load_loses_nothing(cluster):
    topic = unique_topic("rolling")
    cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
    with Load(cluster.bootstrap, topic) as load:
        for node, proc in cluster.brokers.items():
            proc.stop()
            cluster.wait_for(lambda md: node not in md["brokers"], f"broker {node} gone from the cluster")
            proc.start()
            cluster.wait_for(isr_whole(topic), f"broker {node} back in the ISR", timeout=40)
    assert not load.errors, load.errors[:3]
    consumed = consume_all(cluster.bootstrap, topic)
    assert len(consumed) == len(set(consumed))
    assert set(load.acked) <= set(consumed), f"{len(set(load.acked) - set(consumed))} acknowledged records lost"
    assert_replicas_identical(cluster, topic)


def test_etcd_outage_keeps_the_leader_acknowledging_and_loses_nothing(cluster):
    """As Kafka's brokers while the controller quorum is away: the leader and its whole ISR
    still talk, so acks=all goes on without etcd (broker/cluster/member.py says why that is
    safe); the ISR and leadership wait for etcd, and nothing acknowledged is lost after."""
    topic = unique_topic("etcd")
    cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
    with Load(cluster.bootstrap, topic) as load:
        load.wait_for_acks(200)
        since = {node: proc.log_size() for node, proc in cluster.brokers.items()}
        cluster.etcd.pause()
        try:
            # Past the 2 s session every broker knows its lease may be gone, and says so.
            wait_until(lambda: all("lost its etcd session" in proc.log_text(since[node])
                                   for node, proc in cluster.brokers.items()),
                       "every broker to say it lost its etcd session", timeout=20)
            load.wait_for_acks(len(load.acked) + 200, timeout=20)
        finally:
            cluster.etcd.resume()
        cluster.wait_for(lambda md: md["topics"][topic][0]["leader"] >= 0 and len(md["topics"][topic][0]["isr"]) == 3,
                         "leadership and the ISR back after etcd returned", timeout=40)
        load.wait_for_acks(len(load.acked) + 50, timeout=20)  # produce resumed after etcd returned
    consumed = consume_all(cluster.bootstrap, topic)
    assert len(consumed) == len(set(consumed)), "a record was stored twice"
    assert set(load.acked) <= set(consumed), f"{len(set(load.acked) - set(consumed))} acknowledged records lost"
    assert_replicas_identical(cluster, topic)


def test_every_broker_reports_one_cluster_id(cluster):
    ids = set()
    for proc in cluster.brokers.values():
        with Client(proc.host, proc.port) as c:
            ids.add(c.metadata(None).cluster_id)
    assert len(ids) == 1, f"brokers of one cluster report different cluster ids: {ids}"
