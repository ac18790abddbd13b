"""Dynamic topic defaults (broker/settings/dynamic_topic_defaults.py) in a real 3-broker cluster:
the cluster default altered through one broker is kept in etcd and applied by every broker when
its metadata image shows it, so the partition's leader, another broker, enforces it; a broker's
own value is its alone.
"""

from __future__ import annotations

import os

import pytest

from compat_tests.helpers.broker_configs import (
    DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, MESSAGE_TOO_LARGE, NONE, SET, incremental, topic_config)
from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.waiting import wait_until


@pytest.fixture(scope="module")
def cluster():
    with running_cluster() as cluster:
        yield cluster


def _raw(cluster: Cluster, node: int) -> Client:
    proc = cluster.brokers[node]
    return Client(proc.host, proc.port)


def test_a_cluster_default_altered_on_one_broker_holds_on_the_leader(cluster):
    topic = "dyn-defaults-everywhere"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    leader = cluster.leader(topic)
    other = next(n for n in cluster.brokers if n != leader)
    with _raw(cluster, leader) as c:
        assert c.produce(topic, 0, make_batch([os.urandom(5000)]), acks=1).error_code == NONE
    with _raw(cluster, other) as c:
        assert incremental(c, 1, "", [("message.max.bytes", SET, "1000")]) == (NONE, None)
        assert incremental(c, 1, str(other), [("message.max.bytes", SET, "20000")]) == (NONE, None)
        assert topic_config(c, topic, "max.message.bytes")[:2] == ("20000", DYNAMIC_BROKER_CONFIG)
    with _raw(cluster, leader) as c:
        wait_until(lambda: c.produce(topic, 0, make_batch([os.urandom(5000)]), acks=1).error_code == MESSAGE_TOO_LARGE,
                   "the leader enforces the cluster default's message.max.bytes")
        assert topic_config(c, topic, "max.message.bytes")[:2] == ("1000", DYNAMIC_DEFAULT_BROKER_CONFIG)
