"""kafka-python (3.0.12, pure Python) against a real broker process.

Consumers use manual assignment and group_id=None: the broker has no group coordinator yet.
Producers other than the idempotence test set enable_idempotence=False (kafka-python 3 turns it
on by default), so a missing InitProducerId shows up in one test instead of all of them.
"""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import (
    InvalidPartitionsError, KafkaTimeoutError, MessageSizeTooLargeError, TopicAlreadyExistsError,
    UnknownTopicOrPartitionError)

from compat_tests.helpers.records import (
    PARTITIONS, Consumed, Sent, assert_round_trip, assert_values_in_order, round_trip_records)
from compat_tests.helpers.topics import admin_client, unique_topic, wait_for_partitions
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(120)

CODECS = ["gzip", "snappy", "lz4", "zstd"]


def make_producer(broker, **config) -> KafkaProducer:
    config.setdefault("enable_idempotence", False)
    config.setdefault("acks", "all" if config["enable_idempotence"] else 1)
    config.setdefault("linger_ms", 50)
    config.setdefault("request_timeout_ms", 15000)
    config.setdefault("delivery_timeout_ms", 30000)  # fail within the test, not after 2 minutes of retries
    config.setdefault("max_block_ms", 15000)
    return KafkaProducer(bootstrap_servers=broker.bootstrap, client_id="compat-kafka-python", **config)


def make_consumer(broker, **config) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                         check_crcs=True, client_id="compat-kafka-python", request_timeout_ms=15000,
                         **config)


def produce(producer: KafkaProducer, topic: str, recs) -> list[Sent]:
    futures = [(r, producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                 timestamp_ms=r.timestamp, partition=r.partition)) for r in recs]
    producer.flush(30)
    sent = []
    for r, f in futures:
        md = f.get(timeout=30)
        sent.append(Sent(r, md.partition, md.offset))
    return sent


def consume_all(broker, topic: str, partitions: int, expected: int, timeout: float = 20.0,
                **config) -> list[Consumed]:
    """Read every partition from its beginning until `expected` records or end offsets are reached."""
    consumer = make_consumer(broker, **config)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        out: list[Consumed] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                out.extend(Consumed(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()),
                                    m.timestamp, m.timestamp_type) for m in batch)
            if len(out) >= expected and all(consumer.position(tp) >= ends[tp] for tp in tps):
                break
        # One more short poll: anything past what we expected is a duplicate or phantom record.
        for batch in consumer.poll(timeout_ms=300).values():
            out.extend(Consumed(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()),
                                m.timestamp, m.timestamp_type) for m in batch)
        return out
    finally:
        consumer.close()


def counts_by_partition(sent: list[Sent], partitions: int) -> dict[int, int]:
    counts = {p: 0 for p in range(partitions)}
    for s in sent:
        counts[s.partition] += 1
    return counts


def test_round_trip_keys_values_headers_timestamps(broker, topic_factory):
    topic = topic_factory("kp-roundtrip", partitions=PARTITIONS)
    recs = round_trip_records(null_header_values=False, null_key_and_value=False)  # send() refuses both
    producer = make_producer(broker)
    try:
        sent = produce(producer, topic, recs)
    finally:
        producer.close()
    consumed = consume_all(broker, topic, PARTITIONS, len(recs))
    assert_round_trip(sent, consumed)

    consumer = make_consumer(broker)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        counts = counts_by_partition(sent, PARTITIONS)
        assert consumer.beginning_offsets(tps) == {tp: 0 for tp in tps}
        assert consumer.end_offsets(tps) == {tp: counts[tp.partition] for tp in tps}
    finally:
        consumer.close()


@pytest.mark.parametrize("codec", CODECS)
def test_compression_round_trip(broker, topic_factory, codec):
    topic = topic_factory(f"kp-{codec}", partitions=PARTITIONS)
    recs = round_trip_records(null_header_values=False, null_key_and_value=False)  # send() refuses both
    producer = make_producer(broker, compression_type=codec, linger_ms=100)
    try:
        sent = produce(producer, topic, recs)
    finally:
        producer.close()
    assert_round_trip(sent, consume_all(broker, topic, PARTITIONS, len(recs)))


def test_compressed_batches_of_many_small_records(broker, topic_factory):
    """Many records per compressed batch, consumed from an offset in the middle of a batch."""
    topic = topic_factory("kp-many", partitions=1)
    values = [f"record-{i:05d}-".encode() * (i % 7 + 1) for i in range(2000)]
    producer = make_producer(broker, compression_type="lz4", linger_ms=200, batch_size=64 * 1024)
    try:
        futures = [producer.send(topic, value=v, partition=0) for v in values]
        producer.flush(30)
        offsets = [f.get(30).offset for f in futures]
    finally:
        producer.close()
    assert offsets == list(range(len(values)))
    assert_values_in_order(consume_all(broker, topic, 1, len(values)), values)

    consumer = make_consumer(broker)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 1234)
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 5 and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                got.extend((m.offset, m.value) for m in batch)
        assert got[:5] == [(1234 + i, values[1234 + i]) for i in range(5)]
    finally:
        consumer.close()


def test_idempotent_producer_acks_all(broker, topic_factory):
    topic = topic_factory("kp-idem", partitions=PARTITIONS)
    producer = make_producer(broker, enable_idempotence=True, acks="all", linger_ms=20,
                             max_in_flight_requests_per_connection=5)
    n = 600
    try:
        futures = [(i, producer.send(topic, key=f"k{i % 17}".encode(), value=f"v{i}".encode()))
                   for i in range(n)]
        producer.flush(30)
        acks = [(i, f.get(30)) for i, f in futures]
        pid = producer._transaction_manager.producer_id_and_epoch.producer_id
    finally:
        producer.close()
    assert pid >= 0, "idempotent producer never got a producer id (InitProducerId)"

    sent: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    for i, md in acks:
        sent[md.partition].append((md.offset, f"v{i}".encode()))
    for p, entries in sent.items():
        assert [o for o, _ in entries] == list(range(len(entries))), f"partition {p} offsets"
    consumed = consume_all(broker, topic, PARTITIONS, n)
    for p in range(PARTITIONS):
        got = [(c.offset, c.value) for c in consumed if c.partition == p]
        assert got == sent[p], f"partition {p}: read back differs from acked (dup/missing/reordered)"


def _produce_one_batch(broker, topic, timestamps, value_prefix=b"ts") -> list[int]:
    producer = make_producer(broker, linger_ms=1000, batch_size=1 << 20)
    try:
        futures = [producer.send(topic, value=value_prefix + str(i).encode(), timestamp_ms=ts, partition=0)
                   for i, ts in enumerate(timestamps)]
        producer.flush(30)
        return [f.get(30).offset for f in futures]
    finally:
        producer.close()


def test_offsets_for_times_exact_record_inside_batch(broker, topic_factory):
    topic = topic_factory("kp-times", partitions=1)
    t0 = 1_710_000_000_000
    first = _produce_one_batch(broker, topic, [t0 + 10 * i for i in range(10)], b"a")
    second = _produce_one_batch(broker, topic, [t0 + 100 + 10 * i for i in range(10)], b"b")
    assert first + second == list(range(20))

    tp = TopicPartition(topic, 0)
    consumer = make_consumer(broker)
    try:
        cases = {t0 - 5: 0, t0: 0, t0 + 15: 2, t0 + 20: 2, t0 + 90: 9, t0 + 95: 10,
                 t0 + 100: 10, t0 + 155: 16, t0 + 190: 19}
        for ts, want in cases.items():
            got = consumer.offsets_for_times({tp: ts})[tp]
            assert got is not None, f"offsets_for_times({ts - t0:+d}) returned None"
            want_ts = t0 + 10 * want
            assert (got.offset, got.timestamp) == (want, want_ts), f"query t0{ts - t0:+d}"
        assert consumer.offsets_for_times({tp: t0 + 191})[tp] is None
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 20}
    finally:
        consumer.close()


def test_offsets_for_times_unordered_timestamps_in_batch(broker, topic_factory):
    """Kafka answers with the first record, in offset order, whose timestamp is >= the target."""
    topic = topic_factory("kp-times-unordered", partitions=1)
    t0 = 1_720_000_000_000
    assert _produce_one_batch(broker, topic, [t0 + 50, t0 + 10, t0 + 60, t0 + 20]) == [0, 1, 2, 3]
    tp = TopicPartition(topic, 0)
    consumer = make_consumer(broker)
    try:
        for ts, (off, rts) in {t0 + 5: (0, t0 + 50), t0 + 50: (0, t0 + 50), t0 + 55: (2, t0 + 60),
                               t0 + 60: (2, t0 + 60)}.items():
            got = consumer.offsets_for_times({tp: ts})[tp]
            assert got is not None and (got.offset, got.timestamp) == (off, rts), f"query t0{ts - t0:+d}: {got}"
        assert consumer.offsets_for_times({tp: t0 + 61})[tp] is None
    finally:
        consumer.close()


def test_batch_bigger_than_fetch_limits_is_still_returned(broker, topic_factory):
    """KIP-74: the first batch is returned whole even when it exceeds max_partition_fetch_bytes."""
    topic = topic_factory("kp-bigbatch", partitions=1)
    values = [bytes([i]) * 50_000 for i in range(8)]  # one ~400 KB batch
    producer = make_producer(broker, linger_ms=500, batch_size=1 << 20, max_request_size=2 << 20)
    try:
        futures = [producer.send(topic, value=v, partition=0) for v in values]
        producer.flush(30)
        assert [f.get(30).offset for f in futures] == list(range(8))
    finally:
        producer.close()
    consumed = consume_all(broker, topic, 1, len(values), max_partition_fetch_bytes=10_000,
                           fetch_max_bytes=20_000)
    assert_values_in_order(consumed, values)


def test_admin_create_with_configs_and_describe(broker):
    topic = unique_topic("kp-admin-create")
    admin = admin_client(broker.bootstrap)
    try:
        result = admin.create_topics(
            {topic: {"num_partitions": 4, "replication_factor": 1,
                     "configs": {"retention.ms": "3600000", "max.message.bytes": "2000000",
                                 "cleanup.policy": "delete"}}})
        assert [(t["name"], t["error_code"]) for t in result["topics"]] == [(topic, 0)]
        parts = wait_for_partitions(admin, topic, 4)
        assert [p["partition_index"] for p in parts] == [0, 1, 2, 3]
        assert topic in admin.list_topics()

        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                         config_filter="all")
        flat = _flatten_described_configs(configs, topic)
        assert flat.get("retention.ms") == "3600000", flat
        assert flat.get("max.message.bytes") == "2000000", flat
        assert flat.get("cleanup.policy") == "delete", flat

        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}})
    finally:
        admin.close()


def test_admin_create_partitions(broker, topic_factory):
    topic = topic_factory("kp-admin-grow", partitions=2)
    admin = admin_client(broker.bootstrap)
    try:
        admin.create_partitions({topic: 5})
        assert [p["partition_index"] for p in wait_for_partitions(admin, topic, 5)] == [0, 1, 2, 3, 4]
        with pytest.raises(InvalidPartitionsError):
            admin.create_partitions({topic: 3})
    finally:
        admin.close()
    producer = make_producer(broker)
    try:
        md = producer.send(topic, value=b"on a new partition", partition=4).get(30)
        assert (md.partition, md.offset) == (4, 0)
    finally:
        producer.close()
    consumed = consume_all(broker, topic, 5, 1)
    assert [(c.partition, c.offset, c.value) for c in consumed] == [(4, 0, b"on a new partition")]


def test_admin_delete_topic(broker, topic_factory):
    topic = topic_factory("kp-admin-delete", partitions=2)
    producer = make_producer(broker)
    try:
        producer.send(topic, value=b"doomed", partition=1).get(30)
    finally:
        producer.close()
    admin = admin_client(broker.bootstrap)
    try:
        result = admin.delete_topics([topic])
        assert [(t["name"], t["error_code"]) for t in result["topics"]] == [(topic, 0)]
        wait_until(lambda: topic not in admin.list_topics(), f"{topic} gone from ListTopics", timeout=10)
        described = admin.describe_topics([topic])
        assert described and described[0]["error_code"] == UnknownTopicOrPartitionError.errno, described
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.delete_topics([topic])
    finally:
        admin.close()


def test_admin_rejects_invalid_partition_count(broker):
    topic = unique_topic("kp-badparts")
    admin = admin_client(broker.bootstrap)
    try:
        with pytest.raises(InvalidPartitionsError):
            admin.create_topics({topic: {"num_partitions": 0, "replication_factor": 1}})
        assert topic not in admin.list_topics()
    finally:
        admin.close()


def test_log_append_time_topic_stamps_broker_time(broker, topic_factory):
    topic = topic_factory("kp-appendtime", partitions=1, configs={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    producer = make_producer(broker, linger_ms=100)
    try:
        futures = [producer.send(topic, value=b"lat%d" % i, timestamp_ms=1_000_000_000_000 + i, partition=0)
                   for i in range(5)]
        producer.flush(30)
        metas = [f.get(30) for f in futures]
    finally:
        producer.close()
    after = int(time.time() * 1000)
    # The produce response carries the append time; kafka-python reports it as the record's timestamp.
    assert all(before - 1000 <= m.timestamp <= after + 1000 for m in metas), [m.timestamp for m in metas]
    consumed = consume_all(broker, topic, 1, 5)
    assert [(c.offset, c.value) for c in consumed] == [(i, b"lat%d" % i) for i in range(5)]
    assert {c.timestamp_type for c in consumed} == {1}, "records must read back as LogAppendTime"
    assert all(before - 1000 <= c.timestamp <= after + 1000 for c in consumed), [c.timestamp for c in consumed]
    assert {c.timestamp for c in consumed} == {metas[0].timestamp}


def test_record_over_topic_max_message_bytes_is_rejected(broker, topic_factory):
    topic = topic_factory("kp-toolarge", partitions=1, configs={"max.message.bytes": "10000"})
    producer = make_producer(broker, linger_ms=0, retries=0)
    try:
        with pytest.raises(MessageSizeTooLargeError):
            producer.send(topic, value=bytes(20_000), partition=0).get(30)
        md = producer.send(topic, value=bytes(5_000), partition=0).get(30)
        assert (md.partition, md.offset) == (0, 0), "the rejected batch must not take an offset"
    finally:
        producer.close()


def test_fetch_past_the_end_resets_to_earliest(broker, topic_factory):
    topic = topic_factory("kp-outofrange", partitions=1)
    producer = make_producer(broker)
    try:
        for i in range(10):
            producer.send(topic, value=b"r%d" % i, partition=0)
        producer.flush(30)
    finally:
        producer.close()
    consumer = make_consumer(broker, auto_offset_reset="earliest")
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 1000)  # OFFSET_OUT_OF_RANGE from the broker makes the client reset
        got = []
        deadline = time.monotonic() + 15
        while len(got) < 10 and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                got.extend((m.offset, m.value) for m in batch)
        assert got == [(i, b"r%d" % i) for i in range(10)]
    finally:
        consumer.close()


def test_auto_created_topic_gets_num_partitions(broker_factory):
    own = broker_factory("--num-partitions", "4")
    topic = unique_topic("kp-auto")
    producer = make_producer(own, max_block_ms=15000)
    try:
        md = producer.send(topic, value=b"first").get(30)
        assert md.offset == 0
        assert producer.partitions_for(topic) == {0, 1, 2, 3}
    finally:
        producer.close()


def test_no_auto_create_topics_refuses_unknown_topic(broker_factory):
    own = broker_factory("--no-auto-create-topics")
    topic = unique_topic("kp-noauto")
    producer = make_producer(own, max_block_ms=3000)
    try:
        with pytest.raises(KafkaTimeoutError):
            producer.send(topic, value=b"nowhere").get(10)
    finally:
        producer.close()
    admin = admin_client(own.bootstrap)
    try:
        assert topic not in admin.list_topics()
    finally:
        admin.close()


def _flatten_described_configs(described, topic: str) -> dict[str, str]:
    """kafka-python 3 shape: {'topic': {topic_name: {config_name: {'value': ..., ...}}}}."""
    entries = described.get("topic", {}).get(topic)
    assert entries is not None, f"DescribeConfigs has no entry for topic {topic}: {described}"
    return {name: entry["value"] for name, entry in entries.items()}
