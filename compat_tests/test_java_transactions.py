"""Transactions with the Apache Kafka Java client (kafka-clients 4.3.0), both layouts: a
transactional producer commits and aborts, a read_committed consumer sees only what was
committed (and a read_uncommitted one everything), and a consume-transform-produce transaction
sends its input offsets with the consumer's group metadata (sendOffsetsToTransaction), which
count only when it commits. The JVM runs java/TxnCheck.java.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from compat_tests.group_scenarios import GROUP_BROKER_ARGS
from compat_tests.java_client import JavaClient
from compat_tests.topics import create_topic, unique_topic
from compat_tests.transform_app import group_offsets, partition_output, settled_group_offsets

BROKER_ARGS = GROUP_BROKER_ARGS  # the module broker: a short rebalance delay

pytestmark = pytest.mark.timeout(240)

PARTITIONS = 2


class TxnCheck(JavaClient):
    main_class = "TxnCheck"


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


def test_commit_and_abort_seen_by_read_committed_consumers(broker, java):
    topic = create_topic(broker.bootstrap, unique_topic("jtxn"))
    acked = java.call("transactions", topic=topic, partition=0, tid=ids("jtx"), transactions=[
        {"values": ["c1", "c2"], "end": "commit"},
        {"values": ["a1"], "end": "abort"},
        {"values": ["c3"], "end": "commit"}])
    assert acked == [[0, 1], [3], [5]]  # each marker takes an offset: c1 c2 COMMIT a1 ABORT c3 COMMIT
    assert java.call("read", topic=topic, partition=0, isolation="read_committed") == [[0, "c1"], [1, "c2"], [5, "c3"]]
    assert java.call("read", topic=topic, partition=0, isolation="read_uncommitted") == [
        [0, "c1"], [1, "c2"], [3, "a1"], [5, "c3"]]
    # what Java wrote, librdkafka reads the same way
    assert partition_output(broker.bootstrap, topic, 0, "read_committed") == [b"c1", b"c2", b"c3"]


def test_send_offsets_to_transaction_with_the_group_metadata(broker, java):
    source = create_topic(broker.bootstrap, unique_topic("jeos-in"), PARTITIONS)
    sink = create_topic(broker.bootstrap, unique_topic("jeos-out"), PARTITIONS)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(5):
        for p in range(PARTITIONS):
            producer.produce(source, value=b"in-%d-%d" % (p, i), partition=p)
    assert producer.flush(30) == 0
    tid, group = ids("jeos"), ids("jeos-g")
    nothing = {p: -1 for p in range(PARTITIONS)}

    aborted = java.call("transform", source=source, sink=sink, group=group, tid=tid, count=4, end="abort")
    assert aborted["generation"] >= 1 and aborted["memberId"]  # TxnOffsetCommit named a group member
    assert settled_group_offsets(broker, group, source, PARTITIONS) == nothing  # the aborted attempt's offsets never count

    done = java.call("transform", source=source, sink=sink, group=group, tid=tid, count=PARTITIONS * 5, end="commit")
    assert settled_group_offsets(broker, group, source, PARTITIONS) == {int(p): o for p, o in done["offsets"].items()}
    assert group_offsets(broker, group, source, PARTITIONS) == {p: 5 for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        out = java.call("read", topic=sink, partition=p, isolation="read_committed")
        assert [v for _, v in out] == [f"out:in-{p}-{i}" for i in range(5)]
