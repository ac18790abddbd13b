"""Transactions with the Apache Kafka Java client (kafka-clients 4.3.0), both layouts, under both
transaction protocols: a transactional producer commits and aborts, a read_committed consumer
sees only what was committed (and a read_uncommitted one everything), a consume-transform-produce
transaction sends its input offsets with the consumer's group metadata (sendOffsetsToTransaction),
which count only when it commits, and a zombie producer (fenced by a new one of the same
transactional id) cannot write, at its old epoch, where its transaction never went.

The client picks the protocol from ApiVersions' finalized `transaction.version`: at 2 (the
broker's default) transactions V2 (KIP-890: EndTxn v5 bumping the epoch at every end, Produce
v12+ and TxnOffsetCommit v5 enrolling partitions, no AddPartitionsToTxn / AddOffsetsToTxn), at 1
the classic one. Each test reads the broker's request counters (Prometheus, --metrics-port)
around the client's work, so it fails if the client did not speak the protocol the level asks
for. The JVM runs java/TxnCheck.java.
"""

from __future__ import annotations

import urllib.request
import uuid
from collections import Counter

import pytest
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.group_scenarios import GROUP_BROKER_ARGS
from compat_tests.helpers.java_client import JavaClient
from compat_tests.helpers.topics import create_topic, unique_topic
from compat_tests.helpers.transform_app import group_offsets, partition_output, settled_group_offsets

pytestmark = pytest.mark.timeout(240)

PARTITIONS = 2


class TxnCheck(JavaClient):
    main_class = "TxnCheck"


@pytest.fixture(scope="module", params=[2, 1], ids=["tv2", "tv1"])
def transaction_version(request) -> int:
    return request.param


@pytest.fixture(scope="module")
def _module_broker(storage_mode, transaction_version):
    """conftest's shared broker for this module: a short rebalance delay, the transaction.version
    under test, and metrics on."""
    with BrokerProcess(storage_mode=storage_mode, metrics=True, extra_args=[
            *GROUP_BROKER_ARGS, "--transaction-version", str(transaction_version)]) as proc:
        yield proc


@pytest.fixture(scope="module")
def _jvms():
    clients: dict[str, TxnCheck] = {}
    yield clients
    for client in clients.values():
        client.close()


@pytest.fixture
def java(broker, _jvms, tmp_path_factory) -> TxnCheck:
    client = _jvms.get(broker.bootstrap)
    if client is None:
        client = _jvms[broker.bootstrap] = TxnCheck(broker.bootstrap, log_dir=tmp_path_factory.mktemp("txncheck"))
        assert client.call("version") == "4.3.0", "not the kafka-clients jar these tests are written for"
    return client


def ids(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def requests_answered(broker) -> Counter:
    """(API name, version) -> requests the broker answered so far."""
    with urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    counts = Counter()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "kafka_network_requestmetrics_requests_total":
                counts[(s.labels["request"], int(s.labels["version"]))] += int(s.value)
    return counts


def assert_protocol(used: Counter, level: int, offsets: bool = False) -> None:
    """The transaction requests of `used` are those of the protocol `level` makes the client use."""
    versions = {name: {v for (n, v) in used if n == name}
                for name in ("EndTxn", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "Produce")}
    if level >= 2:
        assert versions["EndTxn"] == {5}, used
        assert not versions["AddPartitionsToTxn"] and not versions["AddOffsetsToTxn"], used
        assert min(versions["Produce"]) >= 12, used
        assert versions["TxnOffsetCommit"] == ({5} if offsets else set()), used
    else:
        assert versions["EndTxn"] and max(versions["EndTxn"]) <= 4, used
        assert versions["AddPartitionsToTxn"] and max(versions["AddPartitionsToTxn"]) <= 3, used
        assert max(versions["Produce"]) <= 11, used
        if offsets:
            assert versions["AddOffsetsToTxn"] and max(versions["TxnOffsetCommit"]) <= 4, used


def test_commit_and_abort_seen_by_read_committed_consumers(broker, java, transaction_version):
    topic = create_topic(broker.bootstrap, unique_topic("jtxn"))
    before = requests_answered(broker)
    acked = java.call("transactions", topic=topic, partition=0, tid=ids("jtx"), transactions=[
        {"values": ["c1", "c2"], "end": "commit"},
        {"values": ["a1"], "end": "abort"},
        {"values": ["c3"], "end": "commit"}])
    assert_protocol(requests_answered(broker) - before, transaction_version)
    assert acked == [[0, 1], [3], [5]]  # each marker takes an offset: c1 c2 COMMIT a1 ABORT c3 COMMIT
    assert java.call("read", topic=topic, partition=0, isolation="read_committed") == [[0, "c1"], [1, "c2"], [5, "c3"]]
    assert java.call("read", topic=topic, partition=0, isolation="read_uncommitted") == [
        [0, "c1"], [1, "c2"], [3, "a1"], [5, "c3"]]
    # what Java wrote, librdkafka reads the same way
    assert partition_output(broker.bootstrap, topic, 0, "read_committed") == [b"c1", b"c2", b"c3"]


def test_send_offsets_to_transaction_with_the_group_metadata(broker, java, transaction_version):
    source = create_topic(broker.bootstrap, unique_topic("jeos-in"), PARTITIONS)
    sink = create_topic(broker.bootstrap, unique_topic("jeos-out"), PARTITIONS)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(5):
        for p in range(PARTITIONS):
            producer.produce(source, value=b"in-%d-%d" % (p, i), partition=p)
    assert producer.flush(30) == 0
    tid, group = ids("jeos"), ids("jeos-g")
    nothing = {p: -1 for p in range(PARTITIONS)}

    before = requests_answered(broker)
    aborted = java.call("transform", source=source, sink=sink, group=group, tid=tid, count=4, end="abort")
    assert aborted["generation"] >= 1 and aborted["memberId"]  # TxnOffsetCommit named a group member
    assert settled_group_offsets(broker, group, source, PARTITIONS) == nothing  # the aborted attempt's offsets never count

    done = java.call("transform", source=source, sink=sink, group=group, tid=tid, count=PARTITIONS * 5, end="commit")
    assert_protocol(requests_answered(broker) - before, transaction_version, offsets=True)
    assert settled_group_offsets(broker, group, source, PARTITIONS) == {int(p): o for p, o in done["offsets"].items()}
    assert group_offsets(broker, group, source, PARTITIONS) == {p: 5 for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        out = java.call("read", topic=sink, partition=p, isolation="read_committed")
        assert [v for _, v in out] == [f"out:in-{p}-{i}" for i in range(5)]


def test_a_fenced_zombie_cannot_write_at_its_old_epoch(broker, java, transaction_version):
    topic = create_topic(broker.bootstrap, unique_topic("jzombie"), PARTITIONS)
    before = requests_answered(broker)
    got = java.call("zombie", topic=topic, tid=ids("jz"))
    assert_protocol(requests_answered(broker) - before, transaction_version)
    # Its late batch is refused: INVALID_PRODUCER_EPOCH, the leader's answer to the coordinator's
    # PRODUCER_FENCED, under V2; under V1 its AddPartitionsToTxn is fenced first. Its end is fenced.
    assert got["sendError"] == ("org.apache.kafka.common.errors.InvalidProducerEpochException" if transaction_version >= 2
                                else "org.apache.kafka.common.errors.ProducerFencedException"), got
    assert got["abortError"] == "org.apache.kafka.common.errors.ProducerFencedException", got
    assert java.call("read", topic=topic, partition=0, isolation="read_committed") == [[2, "fresh"]]
    assert java.call("read", topic=topic, partition=1, isolation="read_uncommitted") == []
