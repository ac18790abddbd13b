"""Transactions in the log, seen by real consumers (both storage layouts): transactional batches
of several producers ended by WriteTxnMarkers (the coordinator's inter-broker call, sent here by
hand), and read_committed / read_uncommitted consumers of confluent-kafka and kafka-python.

The log every test starts from (`txn_log`), offsets as written:

    0-1  producer A, transactional   a1 a2      committed at 6
    2-3  producer B, transactional   b1 b2      aborted at 7
    4    no producer id              p
    5    producer C, transactional   c1         still open: the last stable offset is 5
    6    COMMIT marker of A
    7    ABORT marker of B

read_committed consumers get a1 a2 p and wait at 5; read_uncommitted ones get all six records;
markers take offsets but are never delivered. A SIGTERM or kill -9 restart keeps all of it
(the open transaction is found again by replaying the log), and committing C releases c1.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import KafkaError, TopicPartition as CTopicPartition
from kafka import KafkaConsumer, TopicPartition

from compat_tests.helpers.confluent_consumer import make_consumer as confluent_consumer
from compat_tests.helpers.raw_kafka import Client, fetch_values, read_records
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.txn_markers import NONE, producer_id, write_marker
from wire.batch_builder import build_batch

UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_PRODUCER_EPOCH = 47
TRANSACTION_COORDINATOR_FENCED = 52
COMMITTED = [b"a1", b"a2", b"p"]
EVERYTHING = [b"a1", b"a2", b"b1", b"b2", b"p", b"c1"]


def txn_produce(client: Client, topic: str, pid: int | None, values: list[bytes]) -> int:
    producer = (pid, 0, 0) if pid is not None else None
    batch = build_batch([(None, v) for v in values], int(time.time() * 1000), producer, pid is not None)
    p = client.produce(topic, 0, bytes(batch))
    assert p.error_code == NONE, p
    return p.base_offset


def committed_fetch(client: Client, topic: str, offset: int = 0, version: int = 12):
    values = fetch_values([(topic, [(0, offset, 1 << 20)])])
    values["isolation_level"] = 1
    (t,) = client.request(1, version, **values).responses
    (p,) = t.partitions
    return p


@pytest.fixture
def txn_log(client):
    topic = unique_topic("txn")
    client.create_topic(topic)
    a, b, c = producer_id(client), producer_id(client), producer_id(client)
    assert txn_produce(client, topic, a, [b"a1", b"a2"]) == 0
    assert txn_produce(client, topic, b, [b"b1", b"b2"]) == 2
    assert txn_produce(client, topic, None, [b"p"]) == 4
    assert txn_produce(client, topic, c, [b"c1"]) == 5
    assert write_marker(client, topic, a, commit=True) == NONE
    assert write_marker(client, topic, b, commit=False) == NONE
    return topic, (a, b, c)


def _check_log(client: Client, topic: str, pids) -> None:
    a, b, c = pids
    p = committed_fetch(client, topic)
    assert (p.error_code, p.high_watermark, p.last_stable_offset) == (NONE, 8, 5)
    assert [(t.producer_id, t.first_offset) for t in p.aborted_transactions] == [(b, 2)]
    assert [offset for offset, *_ in read_records(p.records)] == [0, 1, 2, 3, 4]  # below the LSO only
    r = client.request(2, 7, replica_id=-1, isolation_level=1, topics=[{"name": topic, "partitions": [
        {"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}])
    assert r.topics[0].partitions[0].offset == 5  # ListOffsets(latest), read_committed: the LSO
    assert client.log_end_offset(topic) == 8  # read_uncommitted: the high watermark
    plain = client.fetch(topic, 0, 0)
    assert plain.aborted_transactions is None and plain.last_stable_offset == 5


def _confluent_values(broker, topic: str, isolation: str, end: int) -> list[bytes]:
    """What a confluent-kafka consumer gets up to its partition EOF, which it reaches at `end`."""
    consumer = confluent_consumer(broker, **{"isolation.level": isolation})
    consumer.assign([CTopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                if msg.offset() >= end:
                    return got
                continue
            got.append(msg.value())
        raise AssertionError(f"no EOF at {end}; got {got}")
    finally:
        consumer.close()


def _kafka_python_values(broker, topic: str, isolation: str, end: int) -> list[bytes]:
    """What a kafka-python consumer gets until its position reaches `end`."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                             isolation_level=isolation, client_id=f"compat-kp-{uuid.uuid4().hex[:6]}")
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    got, deadline = [], time.monotonic() + 30
    try:
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"position {consumer.position(tp)}, not {end}; got {got}"
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(r.value for r in records)
        return got
    finally:
        consumer.close()


def _check_consumers(broker, topic: str) -> None:
    assert _confluent_values(broker, topic, "read_committed", 5) == COMMITTED
    assert _confluent_values(broker, topic, "read_uncommitted", 8) == EVERYTHING
    assert _kafka_python_values(broker, topic, "read_committed", 5) == COMMITTED
    assert _kafka_python_values(broker, topic, "read_uncommitted", 8) == EVERYTHING


def test_read_committed_consumers_skip_aborted_records_and_wait_at_the_lso(broker, client, txn_log):
    topic, pids = txn_log
    _check_log(client, topic, pids)
    _check_consumers(broker, topic)
    assert write_marker(client, topic, pids[2], commit=True) == NONE
    assert committed_fetch(client, topic).last_stable_offset == 9
    assert _kafka_python_values(broker, topic, "read_committed", 9) == COMMITTED + [b"c1"]
    assert _confluent_values(broker, topic, "read_committed", 9) == COMMITTED + [b"c1"]


@pytest.mark.parametrize("how", ["sigterm", "kill-9"])
def test_a_restart_keeps_markers_aborted_ranges_and_the_open_transaction(broker, client, txn_log, how):
    topic, pids = txn_log
    client.close()
    if how == "sigterm":
        broker.stop()
    else:
        broker.kill()
    broker.start()
    with Client.to(broker) as again:
        _check_log(again, topic, pids)
        _check_consumers(broker, topic)
        assert write_marker(again, topic, pids[2], commit=False) == NONE
        assert committed_fetch(again, topic).last_stable_offset == 9
    assert _kafka_python_values(broker, topic, "read_committed", 9) == COMMITTED


@over_versions(27)
def test_write_txn_markers(client, version):
    topic = unique_topic("txn-markers")
    client.create_topic(topic)
    pid = producer_id(client)
    assert txn_produce(client, topic, pid, [b"x"]) == 0
    assert committed_fetch(client, topic).last_stable_offset == 0
    assert write_marker(client, topic, pid, commit=False, version=version, coordinator_epoch=3) == NONE
    assert client.log_end_offset(topic) == 2  # the marker took offset 1
    p = committed_fetch(client, topic)
    assert p.last_stable_offset == 2 and [(t.producer_id, t.first_offset) for t in p.aborted_transactions] == [(pid, 0)]
    # fenced: an older producer epoch, an older coordinator epoch; neither writes anything
    bumped = build_batch([(None, b"y")], int(time.time() * 1000), (pid, 1, 0), True)
    assert client.produce(topic, 0, bytes(bumped)).error_code == NONE
    assert write_marker(client, topic, pid, commit=True, version=version, epoch=0, coordinator_epoch=3) \
        == INVALID_PRODUCER_EPOCH
    assert write_marker(client, topic, pid, commit=True, version=version, epoch=1, coordinator_epoch=2) \
        == TRANSACTION_COORDINATOR_FENCED
    assert client.log_end_offset(topic) == 3
    assert write_marker(client, topic, pid, commit=True, version=version, epoch=1, coordinator_epoch=3) == NONE
    assert committed_fetch(client, topic).last_stable_offset == 4
    assert write_marker(client, topic, pid, commit=True, version=version, partition=7) == UNKNOWN_TOPIC_OR_PARTITION
