"""Listeners, SASL and topic config changes in a real 3-broker cluster (issues 17 and 16).

One cluster for the module (etcd + three brokers), each broker with three listeners:

    PLAINTEXT    the fixture's own (Metadata for wait_for, raw admin requests)
    CLIENT       SASL_PLAINTEXT, advertised as localhost:<port>: what the clients use
    REPLICATION  SASL_PLAINTEXT, the inter-broker listener: followers log in there as the
                 SCRAM-SHA-512 user `broker` (--inter-broker-sasl-*), whose credential every
                 broker's --sasl-scram-user puts in etcd if it is not there yet

Checked: a user added by AlterUserScramCredentials on broker 1 logs in on broker 3; RF=3
acks=all produce and consume with confluent-kafka over SCRAM, every replica's log the same
bytes (the followers fetched over the authenticated listener); Metadata on CLIENT names every
broker's CLIENT endpoint; IncrementalAlterConfigs on broker 2 shows in every broker's
DescribeConfigs, and min.insync.replicas=3 with one follower stopped refuses acks=all with
NOT_ENOUGH_REPLICAS (that topic in the commitlog layout, the SASL one in the segment layout).
"""

from __future__ import annotations

import os
import secrets
import signal
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from compat_tests.helpers.broker_process import free_port
from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.waiting import wait_until
from wire.scram import salted_password

INTER_BROKER = ("broker", "broker-secret")
USER, PASSWORD = "alice", "alice-secret"
SCRAM_SHA_256 = 1  # Kafka's ScramMechanism type
TOPIC_RESOURCE, SET = 2, 0


@pytest.fixture(scope="module")
def sasl_cluster():
    client_ports: dict[int, int] = {}

    def listeners(node: int, port: int) -> list[str]:
        client_ports[node] = client = free_port()
        replication = free_port()
        return ["--listeners", f"PLAINTEXT://127.0.0.1:{port},CLIENT://127.0.0.1:{client},"
                               f"REPLICATION://127.0.0.1:{replication}",
                "--advertised-listeners", f"PLAINTEXT://127.0.0.1:{port},CLIENT://localhost:{client},"
                                          f"REPLICATION://127.0.0.1:{replication}",
                "--listener-security-protocol-map",
                "PLAINTEXT:PLAINTEXT,CLIENT:SASL_PLAINTEXT,REPLICATION:SASL_PLAINTEXT",
                "--inter-broker-listener-name", "REPLICATION",
                "--inter-broker-sasl-mechanism", "SCRAM-SHA-512",
                "--inter-broker-sasl-username", INTER_BROKER[0], "--inter-broker-sasl-password", INTER_BROKER[1],
                "--sasl-scram-user", f"SCRAM-SHA-512=[name={INTER_BROKER[0]},password={INTER_BROKER[1]}]"]

    with running_cluster("segment", broker_args=listeners) as cluster:
        cluster.client_ports = client_ports
        yield cluster


def _raw(cluster: Cluster, node: int) -> Client:
    proc = cluster.brokers[node]
    return Client(proc.host, proc.port)


def _scram_users(cluster: Cluster, node: int) -> set[str]:
    with _raw(cluster, node) as c:
        r = c.request(50, 0, users=None)
    return {u.user for u in r.results}


def _sasl(bootstrap: str) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": USER, "sasl.password": PASSWORD}


def test_scram_user_from_broker_1_produces_and_consumes_through_broker_3(sasl_cluster):
    cluster = sasl_cluster
    salt = secrets.token_bytes(16)
    with _raw(cluster, 1) as c:
        r = c.request(51, 0, deletions=[], upsertions=[{
            "name": USER, "mechanism": SCRAM_SHA_256, "iterations": 4096, "salt": salt,
            "salted_password": salted_password("sha256", PASSWORD, salt, 4096)}])
    assert [(x.user, x.error_code) for x in r.results] == [(USER, 0)]
    # broker 3's etcd watch: milliseconds
    wait_until(lambda: USER in _scram_users(cluster, 3), "broker 3 seeing the user added on broker 1", timeout=5,
               interval=0.05)

    topic = f"sasl-cluster-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "3"})  # acks=all needs both followers
    via_broker_3 = f"localhost:{cluster.client_ports[3]}"
    producer = Producer({**_sasl(via_broker_3), "acks": "all", "message.timeout.ms": 20000})
    shown = producer.list_topics(timeout=10)
    assert {b.id: (b.host, b.port) for b in shown.brokers.values()} == \
        {node: ("localhost", port) for node, port in cluster.client_ports.items()}
    errors = []
    values = [f"v{i}".encode() for i in range(200)]
    for v in values:
        producer.produce(topic, v, on_delivery=lambda err, _msg: err and errors.append(err))
    assert producer.flush(30) == 0 and not errors, errors[:3]

    consumer = Consumer({**_sasl(via_broker_3), "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got, deadline = [], time.monotonic() + 30
    while len(got) < len(values) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    assert got == values
    # A follower reads up to its own high watermark, which it learns from its next fetch answer
    # (Kafka's too): wait for it rather than compare at once.
    assert cluster.wait_replicas_identical(topic, timeout=10), "the replicas are empty"


UNKNOWN_TOPIC = 3


def _incremental(client: Client, topic: str, configs: dict[str, str]) -> tuple[int, str | None]:
    r = client.request(44, 1, validate_only=False, resources=[{
        "resource_type": TOPIC_RESOURCE, "resource_name": topic,
        "configs": [{"name": k, "config_operation": SET, "value": v} for k, v in configs.items()]}])
    (res,) = r.responses
    return res.error_code, res.error_message


def _described(client: Client, topic: str) -> dict[str, str]:
    r = client.request(32, 4, include_synonyms=False, include_documentation=False, resources=[
        {"resource_type": TOPIC_RESOURCE, "resource_name": topic, "configuration_keys": None}])
    (res,) = r.results
    assert res.error_code == 0, res
    return {c.name: c.value for c in res.configs}


def _produce_once(bootstrap: str, topic: str) -> KafkaError | None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                         "retries": 0, "message.timeout.ms": 15000})
    outcome = []
    producer.produce(topic, b"x", partition=0, on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(20)
    return outcome[0]


def test_topic_config_change_on_one_broker_applies_on_every_broker(sasl_cluster):
    cluster = sasl_cluster
    topic = f"configs-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "2", "storage.mode": "commitlog"})
    # Broker 2 answers for a topic once it applied the image that holds it (milliseconds after
    # broker 1 shows it; until then UNKNOWN_TOPIC_OR_PARTITION, where Kafka's controller would
    # answer for any broker): ask until it knows the topic.
    def altered_on_broker_2() -> tuple[int, str | None] | None:
        with _raw(cluster, 2) as c:
            answer = _incremental(c, topic, {"retention.ms": "3600000", "min.insync.replicas": "3"})
        return None if answer[0] == UNKNOWN_TOPIC else answer

    assert wait_until(altered_on_broker_2, "broker 2 knowing the topic", timeout=5, interval=0.05) == (0, None)

    def shown(node: int) -> tuple[str, str]:
        with _raw(cluster, node) as c:
            configs = _described(c, topic)
        return configs["retention.ms"], configs["min.insync.replicas"]

    for node in cluster.brokers:  # broker 2 answered once it applied it; the others within ms
        wait_until(lambda: shown(node) == ("3600000", "3"), f"broker {node} showing the new configs", timeout=5,
                   interval=0.05)

    leader = cluster.leader(topic)
    follower = next(n for n in cluster.brokers if n != leader)
    os.kill(cluster.brokers[follower].pid, signal.SIGSTOP)
    try:
        cluster.wait_for(lambda md: len(md["topics"][topic][0]["isr"]) == 2, "the stopped follower out of the ISR")
        err = _produce_once(cluster.brokers[leader].bootstrap, topic)
        assert err is not None and err.code() == KafkaError.NOT_ENOUGH_REPLICAS, err
    finally:
        os.kill(cluster.brokers[follower].pid, signal.SIGCONT)
