"""Client quotas in a real 3-broker cluster: etcd holds them (one key, as the ACLs), so a quota
altered through one broker is described by every broker and holds a client on every broker,
and a restarted broker still has it.

Checked: AlterClientQuotas on broker 1; DescribeClientQuotas on brokers 2 and 3 lists it; a raw
producer on broker 3 with that client-id is answered with a throttle time (and one without it is
not); removing it through broker 2 frees the client on broker 3; broker 2 restarted describes
what is left.
"""

from __future__ import annotations

import pytest

from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.waiting import wait_until

EXACT = 0


@pytest.fixture(scope="module")
def cluster():
    with running_cluster() as cluster:
        yield cluster


def _raw(cluster: Cluster, node: int, client_id: str = "twinlog-raw") -> Client:
    proc = cluster.brokers[node]
    return Client(proc.host, proc.port, client_id=client_id)


def _alter(c, client_id: str, remove: bool, **values):
    r = c.request(49, 1, validate_only=False, entries=[{
        "entity": [{"entity_type": "client-id", "entity_name": client_id}],
        "ops": [{"key": k, "value": float(v), "remove": remove} for k, v in values.items()]}])
    assert [x.error_code for x in r.entries] == [0], r


def _described(c, client_id: str) -> dict:
    r = c.request(48, 1, strict=True, components=[{"entity_type": "client-id", "match_type": EXACT,
                                                   "match": client_id}])
    assert r.error_code == 0, r
    return {v.key: v.value for x in r.entries for v in x.values}


def _throttle_of_a_produce(cluster, node, client_id, topic) -> float:
    with _raw(cluster, node, client_id) as c:
        leader = c.request(0, 9, transactional_id=None, acks=1, timeout=10_000, topic_data=[{
            "name": topic, "partition_data": [{"index": 0, "records": make_batch([b"q" * 1000] * 100)}]}])
        return leader.throttle_time.total_seconds()


def test_a_quota_altered_on_one_broker_holds_on_every_broker(cluster):
    with _raw(cluster, 1) as c:
        c.create_topic("quota-everywhere", partitions=1)
        _alter(c, "cq-slow", remove=False, producer_byte_rate=1000)
    for node in (2, 3):
        with _raw(cluster, node) as c:
            wait_until(lambda c=c: _described(c, "cq-slow") == {"producer_byte_rate": 1000.0}, timeout=10,
                       what=f"broker {node} describes the quota")
    leader = cluster.leader("quota-everywhere", 0)
    assert _throttle_of_a_produce(cluster, leader, "cq-slow", "quota-everywhere") > 10  # 100 KB at 1 KB/s
    assert _throttle_of_a_produce(cluster, leader, "cq-free", "quota-everywhere") == 0
    with _raw(cluster, 2) as c:
        _alter(c, "cq-slow", remove=True, producer_byte_rate=0)
        _alter(c, "cq-kept", remove=False, consumer_byte_rate=5000)
    wait_until(lambda: _throttle_of_a_produce(cluster, leader, "cq-slow", "quota-everywhere") == 0, timeout=10,
               what="the removed quota no longer throttles")
    cluster.brokers[2].stop()
    cluster.brokers[2].start()
    # A member answers from its port's opening, before its first image is loaded (lifecycle.py:
    # it serves, then joins), so the quotas appear once that image is there.
    with _raw(cluster, 2) as c:
        wait_until(lambda: _described(c, "cq-kept") == {"consumer_byte_rate": 5000.0}, timeout=15,
                   what="the restarted broker loads the quotas from etcd")
        assert _described(c, "cq-slow") == {}
