"""A client that asks a follower is told where the leader is (KIP-951), on a two-broker cluster.

Fetch v16+ answering NOT_LEADER_OR_FOLLOWER carries the partition's current leader and epoch
and the leader's endpoint; so does Produce v10+; older versions leave both at their defaults
(-1, no endpoints), as Kafka does. Fetch v15+ carries the fetcher's replica id in
`replica_state` (KIP-903): Kafka's debugging replica id there reads a follower.
"""

from __future__ import annotations

import pytest

from compat_tests.helpers.broker_process import STORAGE_MODES
from compat_tests.helpers.cluster import REPLICA_READER, running_cluster
from compat_tests.helpers.raw_kafka import Client, as_stored, fetch_values, make_batch
from compat_tests.helpers.served_versions import versions
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

NONE = 0
NOT_LEADER_OR_FOLLOWER = 6
FETCH_HINTS_FROM = 16
PRODUCE_HINTS_FROM = 10


@pytest.fixture(scope="module", params=STORAGE_MODES)
def placed(request):
    """(cluster, topic, its id, leader node, leader epoch, follower node, the batch stored)."""
    with running_cluster(request.param, size=2) as cluster:
        topic = unique_topic("hints")
        cluster.create_topic(topic, replication_factor=2)
        md = cluster.wait_for(lambda m: len(m["topics"][topic][0]["isr"]) == 2, "both replicas in sync")
        state = md["topics"][topic][0]
        leader = state["leader"]
        (follower,) = set(cluster.brokers) - {leader}
        batch = make_batch([b"where is the leader"])
        with Client.to(cluster.brokers[leader]) as c:
            topic_id = c.topic_id(topic)
            assert c.produce(topic, 0, batch).error_code == NONE
        # The follower's high watermark, which bounds a debugging read there, follows on its next fetch.
        wait_until(lambda: cluster.replica_bytes(follower, topic), f"{topic} readable on node {follower}")
        yield cluster, topic, topic_id, leader, state["epoch"], follower, batch


def _endpoint(client, node: int) -> tuple[int, str, int]:
    """The node's endpoint as Metadata gives it on the listener the client came in on."""
    (b,) = [b for b in client.metadata([]).brokers if b.node_id == node]
    return b.node_id, b.host, b.port


def _fetch_partition(client, version, topic, topic_id, replica_id=-1):
    values = fetch_values([(topic, [(0, 0, 1 << 20)])], topic_ids={topic: topic_id})
    values["replica_id"] = replica_id
    values["replica_state"] = {"replica_id": replica_id, "replica_epoch": -1}
    r = client.request(1, version, **values)
    (t,) = r.responses
    (p,) = t.partitions
    return r, p


@pytest.mark.parametrize("version", versions(1, lo=12))
def test_fetch_at_a_follower_names_the_leader(placed, version):
    cluster, topic, topic_id, leader, epoch, follower, _ = placed
    with Client.to(cluster.brokers[follower]) as c:
        r, p = _fetch_partition(c, version, topic, topic_id)
        endpoint = _endpoint(c, leader)
    assert p.error_code == NOT_LEADER_OR_FOLLOWER and not p.records
    if version >= FETCH_HINTS_FROM:
        assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (leader, epoch)
        assert [(n.node_id, n.host, n.port) for n in r.node_endpoints] == [endpoint]
    else:
        assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (-1, -1)
        assert not getattr(r, "node_endpoints", ())


@pytest.mark.parametrize("version", versions(1, lo=15))
def test_replica_state_carries_the_fetchers_id(placed, version):
    """Kafka's debugging replica id, given in replica_state, reads the follower's copy."""
    cluster, topic, topic_id, _, epoch, follower, batch = placed
    with Client.to(cluster.brokers[follower]) as c:
        _, p = _fetch_partition(c, version, topic, topic_id, replica_id=REPLICA_READER)
    assert p.error_code == NONE
    assert bytes(p.records) == as_stored(batch, 0, epoch)


@pytest.mark.parametrize("version", versions(0, lo=9))
def test_produce_at_a_follower_names_the_leader(placed, version):
    cluster, topic, _, leader, epoch, follower, _ = placed
    with Client.to(cluster.brokers[follower]) as c:
        endpoint = _endpoint(c, leader)
        p = c.produce(topic, 0, make_batch([b"misdirected"]), version=version)
        r = c.request(0, version, transactional_id=None, acks=1, timeout=10_000, topic_data=[
            {"name": topic, "topic_id": c.topic_id(topic),
             "partition_data": [{"index": 0, "records": make_batch([b"again"])}]}])
    assert p.error_code == NOT_LEADER_OR_FOLLOWER and p.base_offset == -1
    if version >= PRODUCE_HINTS_FROM:
        assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (leader, epoch)
        assert [(n.node_id, n.host, n.port) for n in r.node_endpoints] == [endpoint]
    else:
        assert not hasattr(p, "current_leader") and not hasattr(r, "node_endpoints")
