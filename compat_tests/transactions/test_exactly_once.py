"""Exactly-once consume-transform-produce with confluent-kafka (librdkafka), both layouts.

An application (transform_app.py) reads an input topic in a consumer group and writes each
record, transformed, to an output topic in a transaction that also commits its input offsets
(send_offsets_to_transaction). Across an aborted attempt, and a restart that leaves a
transaction open behind a producer still alive (a zombie), the committed output holds each input
exactly once, in order; the group's offsets move only when a transaction commits, and each new
instance resumes from them; the zombie cannot commit once the new producer has fenced it.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaException, Producer

from compat_tests.helpers.group_scenarios import GROUP_BROKER_ARGS
from compat_tests.helpers.topics import create_topic, unique_topic
from compat_tests.helpers.transform_app import (
    TransformApp, assert_exactly_once, group_offsets, next_offsets, partition_output, settled_group_offsets)

BROKER_ARGS = GROUP_BROKER_ARGS  # the module broker: a short rebalance delay

pytestmark = pytest.mark.timeout(240)

PARTITIONS = 2
PER_PARTITION = 12
BATCH = 8


@pytest.fixture
def pipeline(broker):
    source = create_topic(broker.bootstrap, unique_topic("eos-in"), PARTITIONS)
    sink = create_topic(broker.bootstrap, unique_topic("eos-out"), PARTITIONS)
    inputs = {p: [b"in-%d-%02d" % (p, i) for i in range(PER_PARTITION)] for p in range(PARTITIONS)}
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(PER_PARTITION):
        for p in range(PARTITIONS):
            producer.produce(source, value=inputs[p][i], partition=p)
    assert producer.flush(30) == 0
    return source, sink, inputs


def positions_after(batch, before: dict[int, int]) -> dict[int, int]:
    return {**before, **{tp.partition: tp.offset for tp in next_offsets(batch)}}


def first_offsets(batch) -> dict[int, int]:
    firsts: dict[int, int] = {}
    for msg in batch:
        firsts.setdefault(msg.partition(), msg.offset())
    return firsts


def resumes_from(batch, done: dict[int, int]) -> bool:
    """Whether a new instance's first records are those right after the committed offsets."""
    firsts = first_offsets(batch)
    return firsts == {p: max(done[p], 0) for p in firsts}


def test_each_input_once_across_an_abort_and_a_producer_restart(broker, pipeline):
    source, sink, inputs = pipeline
    tid, group = f"eos-{uuid.uuid4().hex[:8]}", f"eos-g-{uuid.uuid4().hex[:8]}"
    nothing = {p: -1 for p in range(PARTITIONS)}

    first = TransformApp(broker.bootstrap, tid, group, source, sink)
    batch = first.poll(BATCH)
    assert len(batch) == BATCH
    first.process(batch, "commit")
    done = positions_after(batch, nothing)
    assert settled_group_offsets(broker, group, source, PARTITIONS) == done

    batch = first.poll(BATCH)
    first.process(batch, "open")
    assert group_offsets(broker, group, source, PARTITIONS) == done  # sent to the open transaction: not committed
    first.producer.abort_transaction(60)
    assert settled_group_offsets(broker, group, source, PARTITIONS) == done
    first.close_consumer()

    second = TransformApp(broker.bootstrap, tid, group, source, sink)  # fresh assignment, same id
    batch = second.poll(BATCH)
    assert resumes_from(batch, done)
    second.process(batch, "open")  # ... and the application hangs with it open
    assert group_offsets(broker, group, source, PARTITIONS) == done
    second.close_consumer()

    third = TransformApp(broker.bootstrap, tid, group, source, sink)  # fences second, aborts its transaction
    with pytest.raises(KafkaException):
        second.producer.commit_transaction(30)  # the zombie's output and offsets never count
    assert settled_group_offsets(broker, group, source, PARTITIONS) == done
    left = PARTITIONS * PER_PARTITION - sum(max(o, 0) for o in done.values())
    batch = third.poll(left)
    assert len(batch) == left
    assert resumes_from(batch, done) and len(first_offsets(batch)) == PARTITIONS
    third.process(batch, "commit")
    assert settled_group_offsets(broker, group, source, PARTITIONS) == {p: PER_PARTITION for p in range(PARTITIONS)}
    third.close_consumer()

    assert_exactly_once(broker.bootstrap, sink, PARTITIONS, inputs)
    # the aborted attempts are in the log: a read_uncommitted reader sees the duplicates ruled out above
    uncommitted = sum(len(partition_output(broker.bootstrap, sink, p, "read_uncommitted")) for p in range(PARTITIONS))
    assert uncommitted == PARTITIONS * PER_PARTITION + 2 * BATCH
