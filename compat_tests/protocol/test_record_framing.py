"""Issue 13 item 7 and the decompression part of item 5: every record of a produced batch is
read before it is stored, and reading a compressed batch never stalls the event loop.

- A CRC-valid batch whose records do not parse (built by hand, CRC recomputed) was stored;
  confluent-kafka then stopped silently at its offset and kafka-python raised
  CorruptRecordError. Now that partition gets INVALID_RECORD (Kafka's InvalidRecordException),
  nothing of it is stored, and a good batch to another partition in the same request is.
- A 40 KB produce of 20 zstd batches that each inflate to 60 MB stalled the commitlog broker
  5.3 s (its key walk inflated them on the event loop). Now such batches are inflated in a
  worker thread and no further than 16 MiB (MESSAGE_TOO_LARGE): a health probe (ApiVersions
  on a new connection) must answer in < 100 ms while such requests run.
"""

from __future__ import annotations

import struct
import time

import cramjam

from compat_tests.helpers.probing import probing
from compat_tests.helpers.raw_kafka import Client, make_batch, recrc
from compat_tests.helpers.stall_bounds import within_bound_once
from compat_tests.helpers.topics import unique_topic

INVALID_RECORD, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE = 87, 2, 10
HEADER = 61


def with_records(batch: bytes, records: bytes, codec: int = 0) -> bytes:
    """`batch`'s header over another records region: length, codec and CRC made right."""
    out = bytearray(batch[:HEADER]) + records
    struct.pack_into(">i", out, 8, len(out) - 12)
    out[22] = (out[22] & ~7) | codec
    return recrc(bytes(out))


def broken_framing(batch: bytes) -> bytes:
    """The first record claims one byte more than it holds (its length varint + 2), so it
    swallows the next record's first byte and the batch's records no longer line up."""
    records = bytearray(batch[HEADER:])
    assert records[0] < 0x80, "a one-byte length varint"
    records[0] += 2
    return with_records(batch, bytes(records))


def produce_two(client: Client, topic: str, first: bytes, second: bytes) -> dict[int, int]:
    resp = client.request(0, 9, transactional_id=None, acks=-1, timeout=10_000, topic_data=[
        {"name": topic, "partition_data": [{"index": 0, "records": first}, {"index": 1, "records": second}]}])
    (t,) = resp.responses
    return {p.index: p.error_code for p in t.partition_responses}


def test_broken_record_framing_is_refused_for_its_partition_only(broker):
    topic = unique_topic("framing")
    keys = [b"k%d" % i for i in range(5)]
    good = make_batch([b"value-%d" % i for i in range(5)], keys=keys)
    zstd_good = with_records(good, cramjam.zstd.compress(good[HEADER:]), codec=4)
    with Client.to(broker) as c:
        c.create_topic(topic, partitions=2)
        assert c.produce(topic, 0, good).error_code == 0
        assert produce_two(c, topic, broken_framing(good), good) == {0: INVALID_RECORD, 1: 0}
        zstd_broken = with_records(good, cramjam.zstd.compress(broken_framing(good)[HEADER:]), codec=4)
        assert produce_two(c, topic, zstd_broken, zstd_good) == {0: INVALID_RECORD, 1: 0}
        not_zstd = with_records(good, b"\x28\xb5\x2f\xfd not zstd", codec=4)
        assert produce_two(c, topic, not_zstd, good) == {0: CORRUPT_MESSAGE, 1: 0}
        assert c.log_end_offset(topic, 0) == 5  # nothing of the refused batches was stored
        assert c.log_end_offset(topic, 1) == 15
        assert c.produce(topic, 0, good).error_code == 0
    expected = {0: [b"value-%d" % i for i in range(5)] * 2, 1: [b"value-%d" % i for i in range(5)] * 3}
    assert _kafka_python_values(broker, topic) == expected
    assert _confluent_values(broker, topic) == expected


def _kafka_python_values(broker, topic: str) -> dict[int, list[bytes]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=3000)
    try:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        got: dict[int, list[bytes]] = {0: [], 1: []}
        for message in consumer:
            got[message.partition].append(message.value)
        return got
    finally:
        consumer.close()


def _confluent_values(broker, topic: str) -> dict[int, list[bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique_topic("g"),
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        got: dict[int, list[bytes]] = {0: [], 1: []}
        at_end: set[int] = set()
        deadline = time.monotonic() + 15
        while len(at_end) < 2 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                at_end.add(message.partition())
                continue
            got[message.partition()].append(message.value())
        return got
    finally:
        consumer.close()


def test_zstd_bombs_neither_stall_the_event_loop_nor_get_stored(broker):
    """20 zstd batches of ~2 KB that each inflate to 60 MB of zeros, in one request, three
    times over, while ApiVersions probes on new connections time the event loop (the bound
    must hold in one of a few such rounds: stall_bounds.py)."""
    topic = unique_topic("bomb")
    good = make_batch([b"v"])
    bomb = with_records(good, cramjam.zstd.compress(bytes(60 << 20)), codec=4)
    partitions = 20
    with Client.to(broker, timeout=60) as c:
        c.create_topic(topic, partitions=partitions)

        def attempt(_number: int) -> float:
            waits: list[float] = []
            with probing(broker, waits):
                for _ in range(3):
                    resp = c.request(0, 9, transactional_id=None, acks=1, timeout=30_000, topic_data=[
                        {"name": topic, "partition_data": [{"index": i, "records": bomb} for i in range(partitions)]}])
                    codes = {p.error_code for t in resp.responses for p in t.partition_responses}
                    assert codes == {MESSAGE_TOO_LARGE}, codes  # past the 16 MiB the broker inflates
            assert len(waits) >= 3, waits
            return max(waits)

        within_bound_once(attempt, 0.1, "a health probe during the zstd bombs")
        assert all(c.log_end_offset(topic, i) == 0 for i in range(partitions))
