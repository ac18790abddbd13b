"""compression.type as Kafka applies it (LogValidator): a topic naming a codec has each producer's
batch in another codec rewritten in it by the leader (wire/recompression.py); `producer`, and a
batch already in the codec, are stored byte for byte as sent. Kafka's broker-level
compression.type, a dynamic broker config, is the default of every topic without its own.

Real producers (librdkafka) send in one codec, real consumers (kafka-python, librdkafka, the
Java client with its codec jars) read every record back, and a raw Fetch shows the stored
batches' codec bits.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, TopicPartition
from kafka.record.default_records import DefaultRecordBatchBuilder

from compat_tests.helpers.broker_configs import (
    DELETE, DYNAMIC_DEFAULT_BROKER_CONFIG, NONE, SET, incremental, topic_config)
from compat_tests.helpers.java_client import JavaClient, unb64
from compat_tests.helpers.raw_kafka import Client, as_stored, batch_header, make_batch, split_batches
from compat_tests.helpers.topics import unique_topic

pytestmark = pytest.mark.timeout(240)

CODEC = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
COUNT = 400
RECORDS = [(b"key-%d" % (i % 13), b"value-%05d-" % i + b"abc" * (i % 40), [("n", b"%d" % i)]) for i in range(COUNT)]
# (topic's compression.type, the producer's codec): each rewritten, into each codec
REWRITES = [("gzip", "lz4"), ("snappy", "zstd"), ("lz4", "gzip"), ("zstd", "none"), ("uncompressed", "snappy")]


def stored_codecs(client: Client, topic: str) -> list[int]:
    batches, _ = split_batches(client.stored_bytes(topic))
    assert batches
    return [batch_header(b)["attributes"] & 0x07 for b in batches]


def librdkafka_produce(bootstrap: str, topic: str, codec: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "compression.codec": codec, "linger.ms": 20})
    failed = []
    for key, value, headers in RECORDS:
        producer.produce(topic, value, key, partition=0, headers=headers,
                         on_delivery=lambda err, _msg: err is not None and failed.append(err))
    assert producer.flush(30) == 0 and not failed, failed


def kafka_python_read(bootstrap: str, topic: str) -> list[tuple]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10_000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        out = []
        while len(out) < COUNT:
            polled = consumer.poll(timeout_ms=10_000)
            assert polled, f"{topic}: {len(out)} of {COUNT} read"
            out += [(r.key, r.value, list(r.headers)) for rs in polled.values() for r in rs]
        return out
    finally:
        consumer.close()


def librdkafka_read(bootstrap: str, topic: str) -> list[tuple]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("g"),
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        out = []
        while len(out) < COUNT:
            msg = consumer.poll(10)
            assert msg is not None, f"{topic}: {len(out)} of {COUNT} read"
            assert msg.error() is None, msg.error()
            out.append((msg.key(), msg.value(), list(msg.headers() or [])))
        return out
    finally:
        consumer.close()


def java_read(java: JavaClient, topic: str) -> list[tuple]:
    got = java.call("consume", topic=topic, count=COUNT, seek="beginning", partitions=None, timeoutMs=20000,
                    config={})
    return [(unb64(r["key"]), unb64(r["value"]), [(k, unb64(v)) for k, v in r["headers"]]) for r in got["records"]]


def test_a_topic_codec_rewrites_other_codecs_and_every_client_reads_them(fresh_broker, tmp_path):
    expected = [(k, v, h) for k, v, h in RECORDS]
    with Client.to(fresh_broker) as c, JavaClient(fresh_broker.bootstrap, compression_jars=True,
                                                  log_dir=tmp_path) as java:
        for target, sent in REWRITES:
            topic = unique_topic(f"codec-{target}")
            c.create_topic(topic, configs={"compression.type": target})
            librdkafka_produce(fresh_broker.bootstrap, topic, sent)
            assert set(stored_codecs(c, topic)) == {CODEC[target]}, (target, sent)
            assert kafka_python_read(fresh_broker.bootstrap, topic) == expected, target
            assert librdkafka_read(fresh_broker.bootstrap, topic) == expected, target
            assert java_read(java, topic) == expected, target


def lz4_batch(values: list[bytes]) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=CODEC["lz4"], is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, v in enumerate(values):
        builder.append(i, 1_700_000_000_000 + i, None, v, [])
    return bytes(builder.build())


def test_producer_and_the_same_codec_store_the_batch_as_sent(fresh_broker):
    with Client.to(fresh_broker) as c:
        for config in ({}, {"compression.type": "producer"}, {"compression.type": "lz4"}):
            topic = unique_topic("codec-kept")
            c.create_topic(topic, configs=config)
            batch = lz4_batch([b"v%d" % i * 50 for i in range(100)])
            assert c.produced(topic, 0, batch) == 0
            assert c.stored_bytes(topic) == as_stored(batch, 0), config


def test_the_dynamic_broker_default_applies_to_topics_without_their_own(fresh_broker):
    plain, own = unique_topic("codec-plain"), unique_topic("codec-own")
    with Client.to(fresh_broker) as c:
        c.create_topic(plain)
        c.create_topic(own, configs={"compression.type": "producer"})
        assert incremental(c, 1, "", [("compression.type", SET, "zstd"),
                                      ("compression.zstd.level", SET, "19")]) == (NONE, None)
        assert topic_config(c, plain, "compression.type")[:2] == ("zstd", DYNAMIC_DEFAULT_BROKER_CONFIG)
        for topic in (plain, own):
            assert c.produced(topic, 0, make_batch([b"x" * 1000] * 20)) == 0
        assert stored_codecs(c, plain) == [CODEC["zstd"]]
        assert stored_codecs(c, own) == [CODEC["uncompressed"]]  # its own `producer` wins
        assert kafka_python_read_values(fresh_broker.bootstrap, plain) == [b"x" * 1000] * 20

        assert incremental(c, 1, "", [("compression.type", DELETE, None)]) == (NONE, None)
        assert c.produced(plain, 0, make_batch([b"y"] * 3)) == 20
        assert stored_codecs(c, plain) == [CODEC["zstd"], CODEC["uncompressed"]]


def kafka_python_read_values(bootstrap: str, topic: str) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [r.value for r in consumer]
    finally:
        consumer.close()


def test_a_rewritten_batch_over_max_message_bytes_is_refused(fresh_broker):
    topic = unique_topic("codec-toolarge")
    with Client.to(fresh_broker) as c:
        c.create_topic(topic, configs={"compression.type": "uncompressed", "max.message.bytes": "4000"})
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=CODEC["gzip"], is_transactional=False,
                                            producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
        builder.append(0, 1_700_000_000_000, None, b"z" * 20_000, [])
        batch = bytes(builder.build())
        assert len(batch) < 4000  # fits as sent; 20 KB once uncompressed
        p = c.produce(topic, 0, batch)
        assert p.error_code == 10, p  # MESSAGE_TOO_LARGE
        assert "exceeds the maximum configured size of 4000" in p.error_message
