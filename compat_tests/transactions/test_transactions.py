"""Transactional producers of real clients against the transaction coordinator (both layouts).

confluent-kafka (librdkafka), kafka-python and aiokafka commit and abort; read_committed
consumers never see an aborted record and read_uncommitted ones do, markers take offsets; an
open transaction holds read_committed consumers at its first offset (the LSO); a second producer
of the same transactional id fences the first and its open transaction is aborted; an abandoned
transaction is aborted once its timeout passes, its producer fenced; a kill -9 with a transaction
open loses nothing committed and the open one is never visible.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition as CTopicPartition
from kafka import KafkaProducer

from compat_tests.helpers.confluent_consumer import make_consumer
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import create_topic, unique_topic
from compat_tests.helpers.txn_requests import add_partitions, init, produce_txn
from compat_tests.helpers.waiting import wait_until
from wire.batch_builder import build_batch

INVALID_PRODUCER_EPOCH = 47


def txn_id() -> str:
    return f"tx-{uuid.uuid4().hex[:10]}"


def txn_producer(broker, tid: str, **config) -> Producer:
    conf = {"bootstrap.servers": broker.bootstrap, "transactional.id": tid, "client.id": "compat-txn"}
    conf.update({k.replace("_", "."): v for k, v in config.items()})
    return Producer(conf)


def read(broker, topic: str, isolation: str, until: int, timeout: float = 30.0) -> list[tuple[int, bytes]]:
    """(offset, value) a confluent-kafka consumer gets from offset 0 until its partition EOF lies
    at `until` or beyond (read_committed: the EOF is the last stable offset)."""
    consumer = make_consumer(broker, **{"isolation.level": isolation})
    consumer.assign([CTopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                if msg.offset() >= until:
                    return got
                continue
            got.append((msg.offset(), msg.value()))
        raise AssertionError(f"{isolation}: no EOF at {until}; got {got}")
    finally:
        consumer.close()


def committed_end(broker, topic: str) -> int:
    """Where read_committed consumers stop now: the partition's last stable offset."""
    with Client.to(broker) as c:
        return c.fetch(topic, 0, 0).last_stable_offset


def values(pairs) -> list[bytes]:
    return [v for _, v in pairs]


@pytest.fixture
def topic(broker):
    return create_topic(broker.bootstrap, unique_topic("txn"))


def test_confluent_commit_and_abort(broker, topic):
    p = txn_producer(broker, txn_id())
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"c1", partition=0)
    p.produce(topic, value=b"c2", partition=0)
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce(topic, value=b"a1", partition=0)
    p.flush(30)  # sent, so the abort has something in the log to abort
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, value=b"c3", partition=0)
    p.commit_transaction(30)
    # c1 c2 COMMIT a1 ABORT c3 COMMIT: each marker takes an offset
    wait_until(lambda: committed_end(broker, topic) == 7, what="the last COMMIT marker", timeout=15)
    assert read(broker, topic, "read_committed", 7) == [(0, b"c1"), (1, b"c2"), (5, b"c3")]
    assert read(broker, topic, "read_uncommitted", 7) == [(0, b"c1"), (1, b"c2"), (3, b"a1"), (5, b"c3")]


def test_kafka_python_commit_and_abort(broker, topic):
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=txn_id(), client_id="compat-kp-txn")
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, b"k1", partition=0)
        p.commit_transaction()
        p.begin_transaction()
        p.send(topic, b"kx", partition=0).get(30)
        p.abort_transaction()
        p.begin_transaction()
        p.send(topic, b"k2", partition=0)
        p.commit_transaction()
    finally:
        p.close(timeout=10)
    wait_until(lambda: committed_end(broker, topic) == 6, what="the last COMMIT marker", timeout=15)
    assert values(read(broker, topic, "read_committed", 6)) == [b"k1", b"k2"]
    assert values(read(broker, topic, "read_uncommitted", 6)) == [b"k1", b"kx", b"k2"]


def test_aiokafka_commit_and_abort(broker, topic):
    async def run():
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=txn_id(),
                             client_id="compat-aiokafka-txn")
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait(topic, b"x1", partition=0)
            await p.begin_transaction()
            await p.send_and_wait(topic, b"xa", partition=0)
            await p.abort_transaction()
            async with p.transaction():
                await p.send_and_wait(topic, b"x2", partition=0)
        finally:
            await p.stop()

    asyncio.run(asyncio.wait_for(run(), 60))
    wait_until(lambda: committed_end(broker, topic) == 6, what="the last COMMIT marker", timeout=15)
    assert values(read(broker, topic, "read_committed", 6)) == [b"x1", b"x2"]
    assert values(read(broker, topic, "read_uncommitted", 6)) == [b"x1", b"xa", b"x2"]


def test_an_open_transaction_holds_read_committed_consumers_at_its_first_offset(broker, topic):
    p = txn_producer(broker, txn_id())
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"open", partition=0)
    p.flush(30)
    plain = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    plain.produce(topic, value=b"after", partition=0)
    assert plain.flush(30) == 0
    assert committed_end(broker, topic) == 0
    assert read(broker, topic, "read_committed", 0) == []
    assert values(read(broker, topic, "read_uncommitted", 2)) == [b"open", b"after"]
    p.commit_transaction(30)
    wait_until(lambda: committed_end(broker, topic) == 3, what="the COMMIT marker", timeout=15)
    assert values(read(broker, topic, "read_committed", 3)) == [b"open", b"after"]


def test_a_second_producer_fences_the_first_and_aborts_its_transaction(broker, topic):
    tid = txn_id()
    first = txn_producer(broker, tid)
    first.init_transactions(30)
    first.begin_transaction()
    first.produce(topic, value=b"zombie", partition=0)
    first.flush(30)
    second = txn_producer(broker, tid)
    second.init_transactions(30)  # waits (CONCURRENT_TRANSACTIONS) until the first's is aborted
    second.begin_transaction()
    second.produce(topic, value=b"fresh", partition=0)
    second.commit_transaction(30)
    with pytest.raises(KafkaException) as fenced:
        first.produce(topic, value=b"late", partition=0)
        first.commit_transaction(30)
    assert fenced.value.args[0].code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                           KafkaError.INVALID_PRODUCER_EPOCH), fenced.value
    # zombie ABORT fresh COMMIT
    wait_until(lambda: committed_end(broker, topic) == 4, what="the COMMIT marker", timeout=15)
    assert values(read(broker, topic, "read_committed", 4)) == [b"fresh"]
    assert values(read(broker, topic, "read_uncommitted", 4)) == [b"zombie", b"fresh"]


def test_an_abandoned_transaction_is_aborted_after_its_timeout(broker_factory):
    broker = broker_factory("--transaction-abort-timed-out-transaction-cleanup-interval-ms", "200")
    topic = create_topic(broker.bootstrap, unique_topic("txn-timeout"))
    tid = txn_id()
    with Client.to(broker) as c:  # a producer that begins a transaction and goes silent
        r = init(c, tid, timeout_ms=2_000)
        assert add_partitions(c, tid, r.producer_id, r.producer_epoch, topic) == [0]
        assert produce_txn(c, tid, topic, r.producer_id, r.producer_epoch, 0, [b"abandoned"]) == 0
        started = time.monotonic()
        later = txn_producer(broker, txn_id())
        later.init_transactions(30)
        later.begin_transaction()
        later.produce(topic, value=b"later", partition=0)
        later.commit_transaction(30)
        assert committed_end(broker, topic) == 0  # held behind the abandoned transaction
        wait_until(lambda: committed_end(broker, topic) == 4, what="the abandoned transaction's abort", timeout=30)
        assert time.monotonic() - started >= 1.5  # not before its timeout
        assert values(read(broker, topic, "read_committed", 4)) == [b"later"]
        # its producer was fenced: the epoch it holds is refused
        batch = build_batch([(None, b"zombie")], int(time.time() * 1000), (r.producer_id, r.producer_epoch, 1), True)
        assert c.produce(topic, 0, bytes(batch), transactional_id=tid).error_code == INVALID_PRODUCER_EPOCH


def test_kill_9_with_a_transaction_open(broker_factory):
    broker = broker_factory()
    topic = create_topic(broker.bootstrap, unique_topic("txn-kill"))
    tid = txn_id()
    p = txn_producer(broker, tid)
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"committed", partition=0)
    p.commit_transaction(30)
    wait_until(lambda: committed_end(broker, topic) == 2, what="the COMMIT marker", timeout=15)
    p.begin_transaction()
    p.produce(topic, value=b"open", partition=0)
    p.flush(30)
    broker.kill()
    broker.start()
    assert committed_end(broker, topic) == 2  # the open transaction was found again in the log
    assert values(read(broker, topic, "read_uncommitted", 3)) == [b"committed", b"open"]
    assert values(read(broker, topic, "read_committed", 2)) == [b"committed"]
    again = txn_producer(broker, tid)  # the application restarts its producer
    again.init_transactions(30)  # the coordinator, loaded from its log, aborts the open one
    again.begin_transaction()
    again.produce(topic, value=b"after", partition=0)
    again.commit_transaction(30)
    wait_until(lambda: committed_end(broker, topic) == 6, what="the abort and the new COMMIT", timeout=15)
    assert values(read(broker, topic, "read_committed", 6)) == [b"committed", b"after"]
