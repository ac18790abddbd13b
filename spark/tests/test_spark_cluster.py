"""The streaming pipeline on a replicated cluster rides out broker failures with exact results.

Three brokers + etcd (broker.testing.process_cluster, 2 s sessions), topics with replication factor 3 and
min.insync.replicas=2. The demo's job (1-minute windows per region, 2-minute watermark, parquet
and the topic order-stats) runs on a 1-second processing-time trigger while the leader of
orders-0 and then the broker leading order-stats-0 are SIGKILLed and restarted
(spark/failover_run.py). The windows written must be exactly those a run without failures
writes, computed from the input (on-time orders only, so append mode emits every window ending
by the final watermark): same orders, revenue and items per window and region, in parquet and
in order-stats, and the job must not have needed a restart.

One storage layout (segment): the cluster client tests (compat_tests/cluster/test_cluster_clients.py)
run failover in both layouts; the Spark side does not see the layout.
"""

from __future__ import annotations

import tempfile

import pytest

from confluent_kafka import Producer

from compat_tests.helpers.waiting import wait_until
from spark import order_events
from spark.cluster_brokers import ClusterBrokers
from spark.failover_run import run_with_failures
from spark.metadata import KafkaMetadata


@pytest.fixture(scope="module")
def brokers():
    with ClusterBrokers("segment") as b:
        b.create_topics({"orders": 2, "order-stats": 1})
        yield b


def test_windows_exact_across_leader_kills(spark_session, brokers):
    orders = order_events.generate(1200, late_fraction=0.0)  # 5 minutes of events, ~4 a second
    lines = []
    with tempfile.TemporaryDirectory(prefix="twinlog-spark-cluster-") as work:
        report = run_with_failures(spark_session, brokers, work, orders, max_per_trigger=150,
                                   down_s=3.0, log=lines.append, timeout=150)
    print("\n".join(lines), f"\nbatches {report.batches}, {report.seconds:.0f}s, "
          f"{report.topic_duplicates} duplicate rows in order-stats")
    assert len(report.events) == 2, report.events
    assert report.expected and report.parquet == report.expected
    assert report.topic == report.expected
    assert report.query_restarts == 0, "\n".join(lines)  # the source and sink rode out the kills themselves
    assert sum(report.batches) == len(orders)  # so each order was read once


def test_the_drivers_offsets_follow_a_new_leader(brokers):
    """librdkafka's admin client answers ListOffsets from its metadata cache: after a leader kill
    the old client kept getting no offset (-1001) while a fresh one had it; the driver's retries
    must ask anew."""
    brokers.create_topics({"driver-offsets": 1})
    producer = Producer({"bootstrap.servers": brokers.bootstrap, "acks": "all"})
    for i in range(5):
        producer.produce("driver-offsets", str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    tp = ("driver-offsets", 0)
    metadata = KafkaMetadata(brokers.bootstrap, {}, retries=10)
    assert metadata.latest([tp]) == {tp: 5}
    old = brokers.leader("driver-offsets", 0)
    brokers.kill(old)
    try:
        wait_until(lambda: brokers.leader("driver-offsets", 0) != old, "another leader")
        assert metadata.latest([tp]) == {tp: 5}
    finally:
        brokers.restart(old)
