"""A transaction's markers in a three-broker cluster (both layouts) travel as one WriteTxnMarkers
request per leader, holding every partition of the transaction that broker leads, as Kafka's
TransactionMarkerChannelManager sends them, so each leader appends them together (one group
commit) rather than one request, append and wait per partition. Counted on each leader's
/metrics (kafka_network_requestmetrics_requests_total{request="WriteTxnMarkers"}); the
coordinator's twinlog_transaction_end_step_ms counts each end's markers and Complete steps.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from compat_tests.helpers.broker_process import STORAGE_MODES, free_port
from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.metrics import scrape, total
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.transform_app import partition_output
from compat_tests.helpers.txn_requests import coordinator_of, describe
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(240)

PARTITIONS = 12  # over three leaders: each leads several


@pytest.fixture(params=STORAGE_MODES)
def cluster(request):
    metrics_ports = {node: free_port() for node in (1, 2, 3)}
    with running_cluster(request.param, extra_args=("--transaction-state-log-partitions", "3"),
                         broker_args=lambda node, port: ["--metrics-port", str(metrics_ports[node])]) as c:
        c.metrics_ports = metrics_ports
        yield c


def metric(cluster: Cluster, node: int, name: str, **labels) -> float:
    return total(scrape(cluster.metrics_ports[node]), name, **labels)


def marker_requests(cluster: Cluster, node: int) -> float:
    return metric(cluster, node, "kafka_network_requestmetrics_requests_total", request="WriteTxnMarkers")


def ends(cluster: Cluster, node: int, step: str) -> float:
    return metric(cluster, node, "twinlog_transaction_end_step_ms_count", step=step)


def state(cluster: Cluster, node: int, tid: str) -> str:
    proc = cluster.brokers[node]
    with Client(proc.host, proc.port) as client:
        return describe(client, tid).transaction_state


def test_one_marker_request_per_leader_per_transaction(cluster):
    topic = unique_topic("ctxnmarkers")
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=1)
    tid = f"ctxm-{uuid.uuid4().hex[:8]}"
    coordinator = coordinator_of(cluster, tid)
    led = {node: [i for i in range(PARTITIONS) if cluster.leader(topic, i) == node] for node in cluster.brokers}
    remote = {node: parts for node, parts in led.items() if node != coordinator and parts}
    assert any(len(parts) >= 2 for parts in remote.values()), led  # else one request per partition would pass
    before = {node: marker_requests(cluster, node) for node in cluster.brokers}

    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid, "linger.ms": 50})
    p.init_transactions(60)
    for round_, commit in enumerate((True, False), start=1):
        p.begin_transaction()
        for i in range(PARTITIONS):
            p.produce(topic, value=b"%s-%d" % (b"kept" if commit else b"dropped", i), partition=i)
        p.flush(60)
        if commit:
            p.commit_transaction(60)
        else:
            p.abort_transaction(60)
        # The end completes after EndTxn's answer: once the coordinator wrote it, every marker is in.
        done = "CompleteCommit" if commit else "CompleteAbort"
        wait_until(lambda: state(cluster, coordinator, tid) == done, f"transaction {round_} {done}")
        sent = {node: marker_requests(cluster, node) - before[node] for node in cluster.brokers}
        assert sent == {node: round_ if node in remote else 0 for node in cluster.brokers}, (led, coordinator)
        assert (ends(cluster, coordinator, "markers"), ends(cluster, coordinator, "complete")) == (round_, round_)
    for i in range(PARTITIONS):
        assert partition_output(cluster.bootstrap, topic, i, "read_committed") == [b"kept-%d" % i]
