"""Compacted topics written with confluent-kafka and read back with kafka-python."""

from __future__ import annotations

from confluent_kafka import Producer
from kafka import KafkaConsumer, TopicPartition

COMPACT = {"cleanup.policy": "compact", "segment.bytes": "16384", "min.cleanable.dirty.ratio": "0",
           "delete.retention.ms": "1500"}


def produce_confluent(broker, topic, records, **config):
    """Send (key, value) records; returns {offset: (key, value)} of the acknowledged ones."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "acks": "all",
                         "batch.num.messages": 100, **config})  # many batches: many segments
    acked = {}

    def report(err, msg):
        if err is None:
            acked[msg.offset()] = (msg.key(), msg.value())

    for key, value in records:
        producer.produce(topic, key=key, value=value, partition=0, on_delivery=report)
        producer.poll(0)
    assert producer.flush(30) == 0
    return acked


def read_from(broker, topic, offset=0):
    """[(offset, key, value)] from `offset` to the end, as a consumer sees them."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=1500, fetch_max_bytes=1 << 20)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    end = consumer.end_offsets([tp])[tp]
    consumer.seek(tp, offset)
    out = []
    while consumer.position(tp) < end:
        batch = consumer.poll(timeout_ms=1000)
        out += [(r.offset, r.key, r.value) for recs in batch.values() for r in recs]
        if not batch and consumer.position(tp) < end:
            raise AssertionError(f"consumer stuck at {consumer.position(tp)} of {end}")
    consumer.close()
    return out
