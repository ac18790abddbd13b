"""kafka.isolation.level through the twinlog source: a batch read with read_committed returns
only the records of committed transactions and ends at the last stable offset, one with
read_uncommitted (the connector's default) returns every record, aborted and still open ones
included. Real transactional producer (confluent-kafka), real broker, local Spark."""

from __future__ import annotations

import uuid

from confluent_kafka import Producer


def _transaction(producer: Producer, topic: str, values: list[bytes], end: str | None) -> None:
    producer.begin_transaction()
    for v in values:
        producer.produce(topic, v, partition=0)
    assert producer.flush(30) == 0  # in the log before the transaction ends (or stays open)
    if end == "commit":
        producer.commit_transaction(30)
    elif end == "abort":
        producer.abort_transaction(30)


def _values(spark, broker, topic: str, **options) -> list[tuple[int, bytes]]:
    r = spark.read.format("twinlog").option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", topic)
    for k, v in options.items():
        r = r.option(k, v)
    return sorted((row.offset, bytes(row.value)) for row in r.load().select("offset", "value").collect())


def test_read_committed_sees_committed_transactions_only(spark, broker, topic_factory):
    topic = topic_factory("spark-txn")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"spark-{uuid.uuid4()}",
                         "linger.ms": 5})
    producer.init_transactions(30)
    first = [b"c1-%d" % i for i in range(5)]
    aborted = [b"a-%d" % i for i in range(4)]
    second = [b"c2-%d" % i for i in range(3)]
    still_open = [b"open-%d" % i for i in range(2)]
    _transaction(producer, topic, first, "commit")
    _transaction(producer, topic, aborted, "abort")
    _transaction(producer, topic, second, "commit")
    _transaction(producer, topic, still_open, None)
    try:
        committed = _values(spark, broker, topic, **{"kafka.isolation.level": "read_committed"})
        everything = _values(spark, broker, topic)
        explicit = _values(spark, broker, topic, **{"kafka.isolation.level": "read_uncommitted"})
    finally:
        producer.abort_transaction(30)

    assert [v for _, v in committed] == first + second
    # Each transaction's marker takes an offset: 5 records + commit, 4 + abort, then the second.
    assert [o for o, _ in committed] == [0, 1, 2, 3, 4, 11, 12, 13]
    assert [v for _, v in everything] == first + aborted + second + still_open
    assert explicit == everything

