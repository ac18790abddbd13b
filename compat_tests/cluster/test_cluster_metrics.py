"""Replication metrics on a real three-broker cluster (issue 37 item 4), each moved by the event
it counts and read from the /metrics of the broker Kafka reports it on:

- a stopped follower leaves the ISR: the leader's kafka_server_replicamanager_isrshrinks_total
  grows; resumed, it catches up through many small fetches, its
  kafka_server_replicafetchermanager_maxlag is seen above 0 and back at 0, and the leader's
  isrexpands_total grows;
- the leader killed with its follower in sync: the controller writes a clean election
  (kafka_controller_controllerstats_leaderelectionrateandtimems_count grows, unclean does not);
- the leader killed with the ISR down to itself: the controller's
  kafka_controller_kafkacontroller_offlinepartitionscount counts the partition; an
  ElectLeaders(UNCLEAN) brings it back (uncleanleaderelections_total grows, offline back to 0).

The controller stays up throughout: the topic's replicas are the two other brokers. The leader
drops a lagging follower after 500 ms, before the stopped broker's 2 s etcd session lapses, so
the shrink is the leader's AlterPartition (which Kafka counts) rather than the controller's.
"""

from __future__ import annotations

import os
import signal

import pytest

from compat_tests.helpers.broker_process import STORAGE_MODES, free_port
from compat_tests.helpers.cluster import Cluster, create_on, running_cluster
from compat_tests.helpers.metrics import scrape, total
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(240)

LAG_MS = 500  # replica.lag.time.max.ms: below the 2 s session (compat_tests/helpers/cluster.py)
UNCLEAN = 1  # ElectLeaders election_type
BATCHES = 300  # produced while the follower is stopped, each fetched alone (replica.fetch.max.bytes)


@pytest.fixture(params=STORAGE_MODES)
def cluster(request):
    metrics_ports = {node: free_port() for node in (1, 2, 3)}
    with running_cluster(request.param, extra_args=("--replica-lag-time-max-ms", str(LAG_MS),
                                                    "--replica-fetch-max-bytes", "1"),
                         broker_args=lambda node, port: ["--metrics-port", str(metrics_ports[node])]) as c:
        c.metrics_ports = metrics_ports
        yield c


def metric(cluster: Cluster, node: int, name: str, **labels) -> float:
    return total(scrape(cluster.metrics_ports[node]), name, **labels)


def isr(cluster: Cluster, topic: str) -> list[int]:
    return sorted(cluster.metadata()["topics"][topic][0]["isr"])


def signal_broker(cluster: Cluster, node: int, sig: int) -> None:
    os.kill(cluster.brokers[node].pid, sig)


def test_isr_changes_fetcher_lag_elections_and_offline_partitions(cluster):
    controller = cluster.metadata()["controller"]
    leader, follower = [n for n in sorted(cluster.brokers) if n != controller]
    topic = unique_topic("replmetrics")
    create_on(cluster, topic, [leader, follower])
    shrinks = metric(cluster, leader, "kafka_server_replicamanager_isrshrinks_total")
    expands = metric(cluster, leader, "kafka_server_replicamanager_isrexpands_total")

    # A stopped follower leaves the ISR by the leader's own AlterPartition.
    signal_broker(cluster, follower, signal.SIGSTOP)
    try:
        cluster.wait_for(lambda md: md["topics"][topic][0]["isr"] == [leader], "the stopped follower out of the ISR")
        assert metric(cluster, leader, "kafka_server_replicamanager_isrshrinks_total") >= shrinks + 1
        assert metric(cluster, leader, "kafka_server_replicamanager_underreplicatedpartitions") >= 1
        with Client(cluster.brokers[leader].host, cluster.brokers[leader].port) as c:
            for i in range(BATCHES):
                assert c.produce(topic, 0, make_batch([b"%05d" % i + b"x" * 200]), acks=1).error_code == 0
    finally:
        signal_broker(cluster, follower, signal.SIGCONT)
    # One batch a fetch (replica.fetch.max.bytes=1): the follower is behind the leader's HW for
    # hundreds of round trips, then caught up.
    wait_until(lambda: metric(cluster, follower, "kafka_server_replicafetchermanager_maxlag", clientid="Replica") > 0,
               "the resumed follower's fetcher lag seen above 0", timeout=60)
    cluster.wait_for(lambda md: sorted(md["topics"][topic][0]["isr"]) == sorted([leader, follower]),
                     "the follower back in the ISR", timeout=60)
    assert metric(cluster, leader, "kafka_server_replicamanager_isrexpands_total") >= expands + 1
    wait_until(lambda: metric(cluster, follower, "kafka_server_replicafetchermanager_maxlag", clientid="Replica") == 0,
               "the caught-up follower's lag back at 0")

    # The leader dies with its follower in sync: a clean election by the controller.
    elections = metric(cluster, controller, "kafka_controller_controllerstats_leaderelectionrateandtimems_count")
    unclean = metric(cluster, controller, "kafka_controller_controllerstats_uncleanleaderelections_total")
    cluster.brokers[leader].kill()
    cluster.wait_for(lambda md: md["topics"][topic][0]["leader"] == follower, "the follower elected")
    assert metric(cluster, controller, "kafka_controller_controllerstats_leaderelectionrateandtimems_count") \
        >= elections + 1
    assert metric(cluster, controller, "kafka_controller_controllerstats_uncleanleaderelections_total") == unclean
    cluster.brokers[leader].start()
    cluster.wait_for(lambda md: sorted(md["topics"][topic][0]["isr"]) == sorted([leader, follower]),
                     "the restarted broker back in the ISR", timeout=60)

    # Now `follower` leads. Its follower stops and leaves the ISR, then it dies: no ISR member
    # is left, and unclean election is off, so the partition is offline...
    new_leader, stopped = follower, leader
    assert metric(cluster, controller, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    signal_broker(cluster, stopped, signal.SIGSTOP)
    try:
        cluster.wait_for(lambda md: md["topics"][topic][0]["isr"] == [new_leader], "the ISR down to the leader")
        cluster.brokers[new_leader].kill()
        wait_until(lambda: metric(cluster, controller, "kafka_controller_kafkacontroller_offlinepartitionscount") >= 1,
                   "the partition counted offline on the controller")
    finally:
        signal_broker(cluster, stopped, signal.SIGCONT)
    # ...until Admin asks for an unclean election of the replica that came back.
    cluster.wait_for(lambda md: stopped in md["brokers"], "the resumed broker registered again")
    controller_proc = cluster.brokers[controller]
    with Client(controller_proc.host, controller_proc.port) as c:
        answer = c.request(43, 2, election_type=UNCLEAN, timeout=10_000,
                           topic_partitions=[{"topic": topic, "partitions": [0]}])
    assert [(p.partition_id, p.error_code) for t in answer.replica_election_results for p in t.partition_result] \
        == [(0, 0)], answer
    assert metric(cluster, controller, "kafka_controller_controllerstats_uncleanleaderelections_total") == unclean + 1
    wait_until(lambda: metric(cluster, controller, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0,
               "no partition offline once the unclean election is seen")
