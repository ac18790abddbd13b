"""`--flush-interval-ms` (Kafka's log.flush.interval.ms): appended data is fsynced within one
interval, whatever the producer's acks, and the engine's checkpoint records how far.

What is observable from outside without pulling the power: the engine's recovery checkpoint,
which a flush advances and which otherwise is only written at shutdown. The segment engine keeps
Kafka's `recovery-point-offset-checkpoint`; the commitlog engine its `checkpoint` file.
"""

from __future__ import annotations

import time

from compat_tests.raw_kafka import Client, make_batch
from compat_tests.topics import unique_topic
from segment.kafka.store import RECOVERY_CHECKPOINT, read_checkpoint


def flushed_offset(broker, topic: str) -> int | None:
    """How far the engine's checkpoint says `topic`-0 is on disk (None: not in it)."""
    if broker.storage_mode == "segment":
        return read_checkpoint(broker.data_dir / RECOVERY_CHECKPOINT).get((topic, 0))
    from segment.rocket.checkpoint import flushed_offsets

    return flushed_offsets(broker.data_dir, topic, 0)


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
    while flushed_offset(broker, topic) != 10:
        assert time.monotonic() < deadline, (
            f"checkpoint for {topic}-0 is {flushed_offset(broker, topic)} 5 s after a produce "
            "with a 100 ms flush interval")
        time.sleep(0.05)


def test_without_periodic_flush_the_checkpoint_waits_for_shutdown(broker_factory):
    broker = broker_factory()
    topic = produce_ten(broker)
    time.sleep(1.0)
    assert flushed_offset(broker, topic) in (None, 0)
    broker.stop()
    assert flushed_offset(broker, topic) == 10
