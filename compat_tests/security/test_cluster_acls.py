"""ACLs in a real 3-broker cluster (issue 17): etcd holds them, so an ACL created through one
broker binds the others. Each broker: PLAINTEXT (the fixture's listener, also the inter-broker
one: its principal User:ANONYMOUS is a super user, as a Kafka broker's own principal must be
for follower fetches, which need CLUSTER_ACTION) and CLIENT, SASL_PLAINTEXT with PLAIN user
alice. Every broker runs `--authorizer --super-users User:ANONYMOUS`.

Checked: CreateAcls on broker 1 (alice WRITE on topics prefixed `a.`); alice's confluent-kafka
producer bootstrapped at broker 3 writes `a.t` (RF=3, acks=all: followers fetched under the
authorizer) and gets TOPIC_AUTHORIZATION_FAILED on `b`; DescribeAcls on broker 2 lists the ACL;
DeleteAcls on broker 2 removes it and broker 3 then refuses alice's `a.t` too.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, Producer

from compat_tests.helpers.broker_process import free_port
from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.raw_kafka import Client

TOPIC, PREFIXED, WRITE, ALLOW, ANY = 2, 4, 4, 3, 1
ACL = dict(resource_type=TOPIC, resource_name="a.", resource_pattern_type=PREFIXED, principal="User:alice",
           host="*", operation=WRITE, permission_type=ALLOW)
FILTER = dict(resource_type_filter=TOPIC, resource_name_filter="a.", pattern_type_filter=PREFIXED,
              principal_filter="User:alice", host_filter=None, operation=ANY, permission_type=ANY)


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory):
    users = tmp_path_factory.mktemp("cluster-acls") / "users.jaas"
    users.write_text('user_alice="alice-secret";\n')
    client_ports: dict[int, int] = {}

    def listeners(node: int, port: int) -> list[str]:
        client_ports[node] = client = free_port()
        return ["--listeners", f"PLAINTEXT://127.0.0.1:{port},CLIENT://127.0.0.1:{client}",
                "--listener-security-protocol-map", "PLAINTEXT:PLAINTEXT,CLIENT:SASL_PLAINTEXT",
                "--inter-broker-listener-name", "PLAINTEXT", "--sasl-plain-users", str(users),
                "--authorizer", "--super-users", "User:ANONYMOUS"]

    with running_cluster("segment", broker_args=listeners) as cluster:
        cluster.client_ports = client_ports
        yield cluster


def _raw(cluster: Cluster, node: int) -> Client:
    proc = cluster.brokers[node]
    return Client(proc.host, proc.port)


def _produce_as_alice(cluster: Cluster, node: int, topics: list[str]) -> dict:
    reports = {}
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{cluster.client_ports[node]}", "acks": "all",
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                         "sasl.username": "alice", "sasl.password": "alice-secret", "message.timeout.ms": 15000})
    for topic in topics:
        producer.produce(topic, b"v", on_delivery=lambda err, msg: reports.__setitem__(msg.topic(), err))
    assert producer.flush(30) == 0
    return reports


def test_an_acl_made_on_one_broker_binds_the_others(acl_cluster):
    for name in ("a.t", "b"):
        acl_cluster.create_topic(name, replication_factor=3)
    with _raw(acl_cluster, 1) as c:
        assert c.request(30, 3, creations=[ACL]).results[0].error_code == 0
    deadline = time.monotonic() + 10
    while True:  # broker 3 applies the new ACL when its etcd watch delivers it
        reports = _produce_as_alice(acl_cluster, 3, ["a.t", "b"])
        if reports["a.t"] is None or time.monotonic() > deadline:
            break
    assert reports["a.t"] is None, reports
    assert reports["b"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, reports
    with _raw(acl_cluster, 2) as c:
        listed = c.request(29, 3, **FILTER)
        assert [(r.resource_name, len(r.acls)) for r in listed.resources] == [("a.", 1)]
        removed = c.request(31, 3, filters=[FILTER]).filter_results[0].matching_acls
        assert [m.resource_name for m in removed] == ["a."]
    deadline = time.monotonic() + 10
    while True:  # broker 3 applies the deletion when its etcd watch delivers it
        reports = _produce_as_alice(acl_cluster, 3, ["a.t"])
        if reports["a.t"] is not None or time.monotonic() > deadline:
            break
    assert reports["a.t"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, reports
