"""min.insync.replicas is enforced for acks=all (issue 14): a topic whose ISR is smaller than
it refuses acks=all batches with NOT_ENOUGH_REPLICAS before appending anything, while acks=1
and acks=0 still work, as in Kafka. One broker is a replication factor of 1, so ISR = 1.

Before: min.insync.replicas was stored and shown by DescribeConfigs, and ignored (a topic with
min.insync.replicas=2 on one broker acknowledged acks=all writes)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Producer

from compat_tests.helpers.topics import create_topic, unique_topic

pytestmark = pytest.mark.timeout(60)


def produce_one(bootstrap: str, topic: str, acks: str, value: bytes):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": False,
                         "retries": 0, "message.timeout.ms": 10000})
    outcome = []
    producer.produce(topic, value=value, partition=0, on_delivery=lambda err, msg: outcome.append((err, msg)))
    producer.flush(15)
    return outcome[0]


def test_acks_all_needs_min_insync_replicas(broker):
    topic = unique_topic("minisr")
    create_topic(broker.bootstrap, topic, 1, configs={"min.insync.replicas": "2"})

    err, _ = produce_one(broker.bootstrap, topic, "all", b"refused")
    assert err is not None and err.code() == KafkaError.NOT_ENOUGH_REPLICAS, err

    err, msg = produce_one(broker.bootstrap, topic, "1", b"accepted")
    assert err is None and msg.offset() == 0, "the refused batch was appended" if msg else err


def test_acks_all_with_enough_replicas_is_acknowledged(broker):
    topic = unique_topic("minisr1")
    create_topic(broker.bootstrap, topic, 1, configs={"min.insync.replicas": "1"})
    err, msg = produce_one(broker.bootstrap, topic, "all", b"ok")
    assert err is None and msg.offset() == 0, err
