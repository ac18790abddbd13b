"""The public test fixture (broker/testing/twinlog_broker.py, broker/testing/pytest_plugin.py) as a user meets it.

- TwinlogBroker as a context manager, both layouts: a topic made with create_topic, one record
  produced and consumed with confluent-kafka, the port the broker chose, the work dir gone after.
- A broker that cannot start (a flag it refuses) is a BrokerStartError carrying its log's tail.
- TwinlogProcessCluster (broker/testing/process_cluster.py): three brokers and etcd; an acks=all
  record survives SIGKILL of its partition's leader, another broker leads, and the killed one
  comes back on its port with its data and rejoins the ISR.
- The pytest plugin in a pytest run of its own (a user's project): the `twinlog_broker` fixture,
  its options overridden, and a failing test whose report shows the broker's log.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib import metadata

import pytest
from confluent_kafka import Consumer, Producer

from broker.cli.kafka_client import KafkaClient
from broker.testing import BrokerStartError, TwinlogBroker
from broker.testing.process_cluster import TwinlogProcessCluster
from compat_tests.helpers.broker_process import ROOT, STORAGE_MODES
from compat_tests.helpers.waiting import wait_until


def _isr(cluster: TwinlogProcessCluster, node: int, topic: str) -> list[int]:
    with KafkaClient(cluster.brokers[node].bootstrap_servers, timeout_s=5) as client:
        (t,) = client.metadata([topic]).topics
        return list(t.partitions[0].isr_nodes)


def test_a_process_cluster_survives_a_leader_kill():
    with TwinlogProcessCluster("segment") as cluster:
        cluster.create_topic("replicated", partitions=1, replication_factor=3)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
        producer.produce("replicated", b"kept", partition=0)
        assert producer.flush(30) == 0
        old = cluster.leader("replicated", 0)
        cluster.kill(old)
        assert not cluster.brokers[old].is_running()
        wait_until(lambda: cluster.leader("replicated", 0) != old, "another broker leads", timeout=30)
        cluster.restart(old)
        wait_until(lambda: sorted(_isr(cluster, old, "replicated")) == [1, 2, 3], "the ISR whole again", timeout=30)
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g",
                             "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe(["replicated"])

            def read_back() -> bool:
                msg = consumer.poll(0.5)
                return msg is not None and msg.error() is None and msg.value() == b"kept"
            wait_until(read_back, "the record read back", timeout=30)
        finally:
            consumer.close()


@pytest.mark.parametrize("storage_mode", STORAGE_MODES)
def test_produce_and_consume_through_the_fixture(storage_mode):
    with TwinlogBroker(storage_mode=storage_mode) as broker:
        assert broker.port and broker.port != 9092
        broker.create_topic("fixture-topic", partitions=2, configs={"retention.ms": "3600000"})
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        producer.produce("fixture-topic", b"hello", key=b"k", partition=1)
        assert producer.flush(10) == 0
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                             "auto.offset.reset": "earliest"})
        consumer.subscribe(["fixture-topic"])
        try:
            message = None
            for _ in range(30):
                message = consumer.poll(1)
                if message is not None and not message.error():
                    break
            assert (message.key(), message.value(), message.partition()) == (b"k", b"hello", 1)
        finally:
            consumer.close()
        assert f"({storage_mode} storage)" in broker.log_text()
        workdir = broker.workdir
    assert not workdir.exists()


def test_a_broker_that_cannot_start_names_why():
    broker = TwinlogBroker(extra_args=["--num-partitions", "zero"], start_timeout=20)
    with pytest.raises(BrokerStartError) as failure:
        broker.start()
    message = str(failure.value)
    assert "exited with code 2 during start-up" in message
    assert "--- last" in message and "num.partitions" in message  # the broker's own one-line error
    assert not broker.workdir.exists()


USER_TESTS = '''
import pytest
from confluent_kafka import Producer

@pytest.fixture
def twinlog_broker_options():
    return {"storage_mode": "commitlog"}

def test_passes(twinlog_broker):
    twinlog_broker.create_topic("t")
    p = Producer({"bootstrap.servers": twinlog_broker.bootstrap_servers})
    p.produce("t", b"v")
    assert p.flush(10) == 0
    assert "(commitlog storage)" in twinlog_broker.log_text()

def test_fails(twinlog_broker):
    assert twinlog_broker.bootstrap_servers == "nowhere:1"
'''


def test_the_pytest_plugin_in_a_users_project(tmp_path):
    (tmp_path / "test_user.py").write_text(textwrap.dedent(USER_TESTS))
    # With twinlog installed from this tree's pyproject the entry point loads the plugin;
    # an older editable install lacks it, and -p does what the entry point would.
    installed = any(ep.value == "broker.testing.pytest_plugin" for ep in metadata.entry_points(group="pytest11"))
    load = [] if installed else ["-p", "broker.testing.pytest_plugin"]
    run = subprocess.run([sys.executable, "-m", "pytest", *load, "-p", "no:cacheprovider", "-q", "test_user.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    out = run.stdout + run.stderr
    assert "1 failed, 1 passed" in out, out
    assert "twinlog broker log" in out and "twinlog listening on 127.0.0.1:" in out, out
