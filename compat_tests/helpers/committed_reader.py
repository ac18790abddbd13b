"""What a read_committed consumer sees in a partition now: every committed record, in order.

`committed_values(bootstrap, topic)` reads partition 0 from offset 0 with confluent-kafka
(librdkafka), isolation.level=read_committed, up to the partition EOF at or past the last stable
offset when the read starts. Records of aborted transactions and of a transaction still open
are not among them; each committed record is there once. `bootstrap` may list several brokers:
librdkafka finds the partition's leader.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, TopicPartition


def _consumer(bootstrap: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "compat-committed-reader",
                     "enable.auto.commit": False, "enable.partition.eof": True,
                     "isolation.level": "read_committed"})


def last_stable_offset(bootstrap: str, topic: str, timeout: float = 10.0) -> int:
    # ListOffsets(latest) at read_committed answers the last stable offset, not the high watermark.
    consumer = _consumer(bootstrap)
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=timeout, cached=False)[1]
    finally:
        consumer.close()


def committed_values(bootstrap: str, topic: str, timeout: float = 60.0) -> list[bytes | None]:
    until = last_stable_offset(bootstrap, topic)
    consumer = _consumer(bootstrap)
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes | None] = []
    deadline = time.monotonic() + timeout
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
            got.append(msg.value())
        raise AssertionError(f"read_committed {topic}: no EOF at {until} in {timeout} s; {len(got)} records")
    finally:
        consumer.close()

