"""The console on a three-broker cluster: one member's console shows every member.

One console (node 1's) against etcd and three real brokers, a topic of 6 partitions with 2
replicas each, so node 1 holds some partitions and not others:
- the brokers view lists all three members, each with exactly the partitions Metadata says it
  holds and leads, and names the controller;
- the message browser reads a partition node 1 holds, as leader or follower (a record produced
  by confluent-kafka), and for one it does not hold answers 409 naming the brokers that do.

Cost: one etcd and three broker starts, ~10 s.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from compat_tests.helpers.broker_process import free_port
from compat_tests.helpers.cluster import running_cluster
from compat_tests.helpers.console_api import get
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

PARTITIONS = 6


@pytest.fixture
def cluster():
    console_port = free_port()
    with running_cluster("segment", broker_args=lambda node, port: ["--metrics-port", str(console_port)] if node == 1 else []) as c:
        c.console_port = console_port
        yield c


def test_one_console_shows_every_member_and_its_partitions(cluster):
    topic = unique_topic("console-cluster")
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=2)
    placement = cluster.metadata()["topics"][topic]
    held_here = sorted(i for i, p in placement.items() if 1 in p["replicas"])
    elsewhere = sorted(i for i, p in placement.items() if 1 not in p["replicas"])
    assert held_here and elsewhere, placement  # 6 x 2 replicas over 3 brokers: node 1 holds some, not all

    status, answer = get(cluster.console_port, "/api/brokers")
    assert status == 200
    assert answer["controller_id"] == cluster.metadata()["controller"] and answer["this_broker"] == 1
    assert [b["node_id"] for b in answer["brokers"]] == [1, 2, 3]
    for b in answer["brokers"]:
        node = b["node_id"]
        assert b["port"] == cluster.brokers[node].port
        mine = [(topic, i, p["leader"] == node) for i, p in sorted(placement.items()) if node in p["replicas"]]
        assert [(p["topic"], p["partition"], p["leader"]) for p in b["partitions"] if p["topic"] == topic] == mine
        assert b["replicas"] >= len(mine) and b["leaders"] >= sum(lead for *_, lead in mine)

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    producer.produce(topic, value=b'{"here": true}', partition=held_here[0])
    assert producer.flush(15) == 0

    def values() -> list[str]:  # node 1 may be the follower: it shows the record once its HW has moved
        status, read = get(cluster.console_port, "/api/messages", topic=topic, partition=held_here[0],
                           **{"from": "end"})
        assert status == 200, read
        return [r["value"]["text"] for r in read["records"]]
    assert wait_until(values, "the record below node 1's high watermark") == ['{\n  "here": true\n}']
    status, refused = get(cluster.console_port, "/api/messages", topic=topic, partition=elsewhere[0])
    holders = ", ".join(str(n) for n in placement[elsewhere[0]]["replicas"])
    assert status == 409 and f"hosted on broker {holders}" in refused["error"]
