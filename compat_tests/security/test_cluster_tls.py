"""Brokers fetch from each other over TLS (issue 17): a real 2-broker cluster (etcd + two
brokers, segment layout) whose inter-broker listener REPLICATION is SASL_SSL with client
certificates required (listener.name.REPLICATION.ssl.client.auth=required): each follower
connects with TLS, checks the leader's name against its certificate, presents its own broker
certificate, then logs in with SCRAM-SHA-512 as `broker`. PLAINTEXT is the fixture's port.

RF=2 acks=all produce acknowledged means the follower fetched over that listener (the
high watermark moves only once it has), and both replicas hold the same bytes; a follower that
spoke plaintext to the TLS port (the code before) never catches up and the produce times out.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from broker.security.self_signed_tls import make_tls_files
from compat_tests.helpers.broker_process import free_port
from compat_tests.helpers.cluster import running_cluster
from compat_tests.helpers.waiting import wait_until

INTER_BROKER = ("broker", "broker-secret")


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    files = make_tls_files(tmp_path_factory.mktemp("tls"), clients=())
    replication_ports: dict[int, int] = {}

    def listeners(node: int, port: int) -> list[str]:
        replication_ports[node] = replication = free_port()
        return ["--listeners", f"PLAINTEXT://127.0.0.1:{port},REPLICATION://127.0.0.1:{replication}",
                "--listener-security-protocol-map", "PLAINTEXT:PLAINTEXT,REPLICATION:SASL_SSL",
                "--inter-broker-listener-name", "REPLICATION",
                "--ssl-keystore-location", str(files.broker_cert), "--ssl-key-location", str(files.broker_key),
                "--ssl-truststore-location", str(files.ca), "--listener-ssl-client-auth", "REPLICATION=required",
                "--inter-broker-sasl-mechanism", "SCRAM-SHA-512",
                "--inter-broker-sasl-username", INTER_BROKER[0], "--inter-broker-sasl-password", INTER_BROKER[1],
                "--sasl-scram-user", f"SCRAM-SHA-512=[name={INTER_BROKER[0]},password={INTER_BROKER[1]}]"]

    with running_cluster("segment", size=2, broker_args=listeners) as cluster:
        cluster.replication_ports = replication_ports
        yield cluster


def test_followers_fetch_over_tls_and_acks_all_completes(tls_cluster):
    topic = f"tls-replicated-{uuid.uuid4().hex[:6]}"
    tls_cluster.create_topic(topic, partitions=1, replication_factor=2)
    leader = tls_cluster.leader(topic)
    follower = next(n for n in tls_cluster.brokers if n != leader)
    producer = Producer({"bootstrap.servers": tls_cluster.bootstrap, "acks": "all", "message.timeout.ms": 20000})
    errors = []
    for i in range(20):
        producer.produce(topic, f"value-{i}".encode(), on_delivery=lambda err, _m: err and errors.append(err))
    assert producer.flush(30) == 0 and not errors, errors
    tls_cluster.wait_for(lambda md: sorted(md["topics"][topic][0]["isr"]) == sorted(tls_cluster.brokers), "ISR of 2")
    leader_bytes = tls_cluster.replica_bytes(leader, topic)
    assert leader_bytes.count(b"value-") == 20
    # the follower's high watermark comes with its next fetch
    wait_until(lambda: tls_cluster.replica_bytes(follower, topic) == leader_bytes,
               "the follower's copy like the leader's", timeout=15)
    port = tls_cluster.replication_ports[leader]
    assert f"connected to 127.0.0.1:{port}" in tls_cluster.brokers[follower].log_text(), \
        tls_cluster.brokers[follower].log_tail()
    assert "TLS handshake failed" not in tls_cluster.brokers[leader].log_text()
