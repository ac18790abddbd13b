"""`--flush-interval-ms` (Kafka's log.flush.interval.ms): appended data is fsynced within one
interval, whatever the producer's acks, and the engine's checkpoint records how far.

What is observable from outside without pulling the power: the engine's recovery checkpoint,
which a flush advances and which otherwise is only written at shutdown. The segment engine keeps
Kafka's `recovery-point-offset-checkpoint`; the commitlog engine the durable commitlog position
in its `checkpoint` file.
"""

from __future__ import annotations

import time

from compat_tests.raw_kafka import Client, make_batch
from compat_tests.topics import unique_topic
from segment.kafka.store import RECOVERY_CHECKPOINT, read_checkpoint


def on_disk(broker, topic: str) -> bool:
    """Whether the engine's checkpoint says the ten records of `topic`-0 are fsynced."""
    if broker.storage_mode == "segment":
        return read_checkpoint(broker.data_dir / RECOVERY_CHECKPOINT).get((topic, 0)) == 10
    from segment.rocket.checkpoint import read_checkpoint as read_rocket_checkpoint
    from segment.rocket.store import STORE_DIR

    # The broker is fresh and this topic its only one: the commitlog holds nothing else, so any
    # durable position past 0 covers the produced unit.
    return read_rocket_checkpoint(broker.data_dir / STORE_DIR).flushed > 0


def produce_ten(broker) -> str:
    topic = unique_topic("flush")
    with Client.to(broker) as c:
        c.create_topic(topic, 1)
        p = c.produce(topic, 0, make_batch([b"r%d" % i for i in range(10)]), acks=1)
        assert p.error_code == 0 and p.base_offset == 0, p
    return topic


def test_periodic_flush_advances_the_checkpoint(broker_factory):
    broker = broker_factory("--flush-interval-ms", "100")
    topic = produce_ten(broker)
    deadline = time.monotonic() + 5
    while not on_disk(broker, topic):
        assert time.monotonic() < deadline, (
            f"the checkpoint does not cover {topic}-0 5 s after a produce with a 100 ms flush interval")
        time.sleep(0.05)


def test_without_periodic_flush_the_checkpoint_waits_for_shutdown(broker_factory):
    broker = broker_factory()
    topic = produce_ten(broker)
    time.sleep(1.0)
    assert not on_disk(broker, topic)
    broker.stop()
    assert on_disk(broker, topic)
