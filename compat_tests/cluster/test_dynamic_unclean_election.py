"""unclean.leader.election.enable set at runtime on a real three-broker cluster: a partition whose
whole ISR is gone stays offline until the cluster default (IncrementalAlterConfigs of the BROKER
resource with an empty name) enables unclean election; the controller then makes the replica
that came back, out of sync, the leader at once (broker/cluster/controller.py unclean_allowed),
and a consumer reads what that replica held, the records only the dead leader had being lost.
A topic that sets the config false itself stays offline: its own value beats every broker layer.

The controller stays up throughout: the topics' replicas are the two other brokers. The leader
drops its stopped follower after 500 ms (replica.lag.time.max.ms), before the stopped broker's
etcd session lapses, so the follower is out of the ISR when the leader dies.
"""

from __future__ import annotations

import os
import signal

import pytest
from kafka import KafkaConsumer, TopicPartition

from compat_tests.helpers.broker_configs import NONE, SET, incremental
from compat_tests.helpers.broker_process import STORAGE_MODES
from compat_tests.helpers.cluster import Cluster, create_on, running_cluster
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(240)

LAG_MS = 500


@pytest.fixture(params=STORAGE_MODES)
def cluster(request):
    with running_cluster(request.param, extra_args=("--replica-lag-time-max-ms", str(LAG_MS))) as c:
        yield c


def produce(cluster: Cluster, node: int, topic: str, values: list[bytes], acks: int) -> None:
    proc = cluster.brokers[node]
    with Client(proc.host, proc.port) as c:
        for v in values:
            assert c.produce(topic, 0, make_batch([v]), acks=acks).error_code == NONE


def read_all(cluster: Cluster, topic: str) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        out = []
        while len(out) < end:
            batch = consumer.poll(timeout_ms=5000)
            assert batch, f"nothing more to read from {topic} at {len(out)} of {end}"
            out += [r.value for records in batch.values() for r in records]
        return out
    finally:
        consumer.close()


def test_enabling_unclean_election_at_runtime_elects_the_out_of_sync_replica(cluster):
    controller = cluster.metadata()["controller"]
    leader, follower = [n for n in sorted(cluster.brokers) if n != controller]
    topic, pinned = unique_topic("dyn-unclean"), unique_topic("dyn-unclean-pinned")
    create_on(cluster, topic, [leader, follower])
    create_on(cluster, pinned, [leader, follower])
    with Client.to(cluster.brokers[leader]) as c:  # the topic's own false, beating the broker layers
        r = c.request(44, 1, validate_only=False, resources=[{"resource_type": 2, "resource_name": pinned, "configs": [
            {"name": "unclean.leader.election.enable", "config_operation": SET, "value": "false"}]}])
        assert r.responses[0].error_code == NONE, r
    kept = [b"kept-%d" % i for i in range(5)]
    produce(cluster, leader, topic, kept, acks=-1)
    # acks=-1 is answered once the ISR of the moment has the records, and that can be the
    # leader alone (min.insync.replicas=1), as in Kafka: on a loaded machine the follower may
    # open the partition late, or its first fetch reach the leader before the leader opened it
    # and back off 1 s (replica.fetch.backoff.ms); either way the leader drops it after LAG_MS.
    # It fetches the records all the same: wait until its copy, up to its HW, is the leader's.
    wait_until(lambda: cluster.replica_copy(follower, topic) == cluster.replica_bytes(leader, topic),
               "the kept records on the follower too")

    # The follower stops and leaves the ISR; what the leader takes then, only the leader has.
    os.kill(cluster.brokers[follower].pid, signal.SIGSTOP)
    try:
        cluster.wait_for(lambda md: all(md["topics"][t][0]["isr"] == [leader] for t in (topic, pinned)),
                         "the stopped follower out of both ISRs")
        produce(cluster, leader, topic, [b"lost-%d" % i for i in range(3)], acks=1)
        cluster.brokers[leader].kill()
    finally:
        os.kill(cluster.brokers[follower].pid, signal.SIGCONT)
    md = cluster.wait_for(lambda md: follower in md["brokers"] and leader not in md["brokers"]
                          and all(md["topics"][t][0]["leader"] == -1 for t in (topic, pinned)),
                          "both partitions offline with the follower back")
    assert md["topics"][topic][0]["isr"] == [leader]  # the dead leader alone: the follower is out of sync

    with Client.to(cluster.brokers[controller]) as c:
        assert incremental(c, 1, "", [("unclean.leader.election.enable", SET, "true")]) == (NONE, None)
    md = cluster.wait_for(lambda md: md["topics"][topic][0]["leader"] == follower, "the out-of-sync replica elected")
    assert md["topics"][topic][0]["isr"] == [follower]
    assert md["topics"][pinned][0]["leader"] == -1  # its own false kept it offline
    cluster.wait_led_here(topic, 0, follower)
    assert read_all(cluster, topic) == kept
    produce(cluster, follower, topic, [b"after"], acks=-1)
    assert read_all(cluster, topic) == kept + [b"after"]
