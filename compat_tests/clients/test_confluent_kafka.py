"""confluent-kafka (librdkafka) against a real broker process.

librdkafka insists on a group.id for a Consumer even when nothing uses the group, so consumers
set one but use assign() and enable.auto.commit=False: no JoinGroup, no OffsetCommit (librdkafka
may still look the coordinator up in the background; that must not stop fetching).
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, KafkaError, KafkaException, Producer,
    TopicPartition)
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic, ResourceType

from compat_tests.helpers.confluent_consumer import make_consumer
from compat_tests.helpers.records import (
    PARTITIONS, Consumed, Rec, Sent, assert_round_trip, assert_values_in_order, round_trip_records)
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(120)

CODECS = ["gzip", "snappy", "lz4", "zstd"]
TS_TYPE = {TIMESTAMP_CREATE_TIME: 0, TIMESTAMP_LOG_APPEND_TIME: 1}


def make_producer(broker, **config) -> Producer:
    conf = {"bootstrap.servers": broker.bootstrap, "client.id": "compat-confluent", "linger.ms": 50,
            "enable.idempotence": False, "acks": "all", "message.timeout.ms": 30000}
    conf.update({k.replace("_", "."): v for k, v in config.items()})
    return Producer(conf)


def make_admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "compat-confluent-admin"})


def produce(producer: Producer, topic: str, recs) -> list[Sent]:
    results: dict[int, tuple] = {}

    def delivered(i):
        def cb(err, msg):
            results[i] = (err, msg.partition(), msg.offset())
        return cb

    for i, r in enumerate(recs):
        kwargs = dict(key=r.key, value=r.value, headers=list(r.headers), timestamp=r.timestamp,
                      on_delivery=delivered(i))
        if r.partition is not None:
            kwargs["partition"] = r.partition
        producer.produce(topic, **kwargs)
        producer.poll(0)
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} messages still undelivered after 30 s"
    errors = {i: e for i, (e, _, _) in results.items() if e is not None}
    assert not errors, f"delivery errors: {errors}"
    return [Sent(r, results[i][1], results[i][2]) for i, r in enumerate(recs)]


def consume_all(broker, topic: str, partitions: int, timeout: float = 20.0, start=OFFSET_BEGINNING,
                **config) -> list[Consumed]:
    """Read each partition from `start` until librdkafka reports partition EOF on every one."""
    consumer = make_consumer(broker, **config)
    try:
        consumer.assign([TopicPartition(topic, p, start) for p in range(partitions)])
        out: list[Consumed] = []
        at_eof: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(at_eof) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_eof.add(msg.partition())
                    continue
                raise KafkaException(msg.error())
            at_eof.discard(msg.partition())
            ts_type, ts = msg.timestamp()
            out.append(Consumed(msg.partition(), msg.offset(), msg.key(), msg.value(),
                                tuple(msg.headers() or ()), ts, TS_TYPE.get(ts_type, ts_type)))
        assert len(at_eof) == partitions, f"only partitions {sorted(at_eof)} reached EOF in {timeout}s"
        return out
    finally:
        consumer.close()


def create_topic(broker, prefix: str, partitions: int, config: dict | None = None) -> str:
    name = unique_topic(prefix)
    admin = make_admin(broker)
    fs = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                       config=config or {})], operation_timeout=15, request_timeout=15)
    fs[name].result(15)
    wait_for_partitions(admin, name, partitions)
    return name


def wait_for_partitions(admin: AdminClient, name: str, partitions: int, timeout: float = 15.0) -> list[int]:
    def ready() -> list[int] | None:
        md = admin.list_topics(topic=name, timeout=5).topics.get(name)
        if md is not None and md.error is None and len(md.partitions) == partitions \
                and all(p.leader >= 0 and p.error is None for p in md.partitions.values()):
            return sorted(md.partitions)
        return None

    return wait_until(ready, f"{name} ready with {partitions} partitions", timeout=timeout)


def test_round_trip_keys_values_headers_timestamps(broker):
    topic = create_topic(broker, "ck-roundtrip", PARTITIONS)
    recs = round_trip_records()
    producer = make_producer(broker)
    sent = produce(producer, topic, recs)
    assert_round_trip(sent, consume_all(broker, topic, PARTITIONS))

    consumer = make_consumer(broker)
    try:
        for p in range(PARTITIONS):
            n = sum(1 for s in sent if s.partition == p)
            assert consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) == (0, n), f"p{p}"
    finally:
        consumer.close()


@pytest.mark.parametrize("codec", CODECS)
def test_compression_round_trip(broker, codec):
    topic = create_topic(broker, f"ck-{codec}", PARTITIONS)
    recs = round_trip_records()
    producer = make_producer(broker, compression_type=codec, linger_ms=100)
    assert_round_trip(produce(producer, topic, recs), consume_all(broker, topic, PARTITIONS))


def test_idempotent_producer_acks_all(broker):
    topic = create_topic(broker, "ck-idem", PARTITIONS)
    producer = make_producer(broker, enable_idempotence=True, acks="all", linger_ms=20,
                             max_in_flight_requests_per_connection=5)
    recs = [(f"k{i % 17}".encode(), f"v{i}".encode()) for i in range(2000)]
    acked: dict[int, tuple] = {}
    for i, (k, v) in enumerate(recs):
        producer.produce(topic, key=k, value=v,
                         on_delivery=lambda err, msg, i=i: acked.__setitem__(i, (err, msg.partition(), msg.offset())))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert all(e is None for e, _, _ in acked.values()), [e for e, _, _ in acked.values() if e][:5]
    sent: dict[int, list] = {p: [] for p in range(PARTITIONS)}
    for i in sorted(acked):
        _, p, o = acked[i]
        sent[p].append((o, recs[i][1]))
    for p, entries in sent.items():
        assert [o for o, _ in entries] == list(range(len(entries))), f"partition {p} offsets"
    consumed = consume_all(broker, topic, PARTITIONS)
    for p in range(PARTITIONS):
        assert [(c.offset, c.value) for c in consumed if c.partition == p] == sent[p], f"partition {p}"


def test_offsets_for_times_exact_record_inside_batch(broker):
    topic = create_topic(broker, "ck-times", 1)
    t0 = 1_740_000_000_000
    producer = make_producer(broker, linger_ms=1000, batch_num_messages=10000)
    offsets = []
    for base in (0, 100):  # two batches of ten records, timestamps 10 ms apart
        recs_acked = {}
        for i in range(10):
            producer.produce(topic, value=b"r%d" % (base + i), partition=0, timestamp=t0 + base + 10 * i,
                             on_delivery=lambda err, msg, i=i: recs_acked.__setitem__(i, (err, msg.offset())))
        assert producer.flush(30) == 0
        offsets += [recs_acked[i][1] for i in range(10)]
    assert offsets == list(range(20))

    consumer = make_consumer(broker)
    try:
        cases = {t0 - 5: 0, t0: 0, t0 + 15: 2, t0 + 20: 2, t0 + 90: 9, t0 + 95: 10, t0 + 155: 16,
                 t0 + 190: 19, t0 + 191: -1}
        got = {ts: consumer.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=10)[0].offset
               for ts in cases}
        assert got == cases
    finally:
        consumer.close()
    # The record found is the record asked for: read it back and check its timestamp.
    consumed = consume_all(broker, topic, 1, start=16)
    assert [(c.offset, c.timestamp) for c in consumed] == [(o, t0 + 10 * o) for o in range(16, 20)]


def test_batch_bigger_than_fetch_limits_is_still_returned(broker):
    topic = create_topic(broker, "ck-bigbatch", 1)
    values = [bytes([i]) * 60_000 for i in range(10)]
    producer = make_producer(broker, linger_ms=500, batch_size=2_000_000, message_max_bytes=2_000_000)
    sent = produce(producer, topic, [Rec(None, v, (), 1_750_000_000_000 + i, 0) for i, v in enumerate(values)])
    assert [s.offset for s in sent] == list(range(10))
    consumed = consume_all(broker, topic, 1, max_partition_fetch_bytes=10_000, fetch_max_bytes=20_000,
                           message_max_bytes=10_000)
    assert_values_in_order(consumed, values)


def test_admin_create_with_configs_and_describe(broker):
    topic = unique_topic("ck-admin-create")
    admin = make_admin(broker)
    fs = admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1,
                                       config={"retention.ms": "5400000", "cleanup.policy": "delete",
                                               "max.message.bytes": "3000000"})])
    assert fs[topic].result(15) is None
    assert wait_for_partitions(admin, topic, 4) == [0, 1, 2, 3]

    res = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([res])[res].result(15)
    values = {name: e.value for name, e in entries.items()}
    assert values.get("retention.ms") == "5400000", values
    assert values.get("cleanup.policy") == "delete", values
    assert values.get("max.message.bytes") == "3000000", values

    again = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    with pytest.raises(KafkaException) as exc:
        again[topic].result(15)
    assert exc.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS


def test_admin_create_partitions(broker):
    topic = create_topic(broker, "ck-admin-grow", 2)
    admin = make_admin(broker)
    assert admin.create_partitions([NewPartitions(topic, 4)])[topic].result(15) is None
    assert wait_for_partitions(admin, topic, 4) == [0, 1, 2, 3]
    shrink = admin.create_partitions([NewPartitions(topic, 1)])
    with pytest.raises(KafkaException) as exc:
        shrink[topic].result(15)
    assert exc.value.args[0].code() == KafkaError.INVALID_PARTITIONS
    producer = make_producer(broker)
    sent = produce(producer, topic, [Rec(None, b"on partition 3", (), 1_750_000_000_000, 3)])
    assert [(s.partition, s.offset) for s in sent] == [(3, 0)]


def test_admin_delete_topic(broker):
    topic = create_topic(broker, "ck-admin-delete", 2)
    admin = make_admin(broker)
    assert admin.delete_topics([topic], operation_timeout=15)[topic].result(15) is None
    wait_until(lambda: topic not in admin.list_topics(timeout=5).topics, f"{topic} gone from Metadata", timeout=10)
    again = admin.delete_topics([topic])
    with pytest.raises(KafkaException) as exc:
        again[topic].result(15)
    assert exc.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_admin_validate_only_creates_nothing(broker):
    # librdkafka refuses num_partitions=0 itself, so the broker-side check exercised here is
    # CreateTopics validate_only: a valid request is accepted and nothing is created.
    topic = unique_topic("ck-validate")
    admin = make_admin(broker)
    fs = admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)], validate_only=True)
    assert fs[topic].result(15) is None
    assert topic not in admin.list_topics(timeout=5).topics, "validate_only created the topic"


def test_waiting_fetch_returns_new_record_promptly(broker):
    """A consumer parked at the end with a long fetch.wait.max.ms gets a new record well before it.

    Kafka parks such a fetch and completes it as soon as data arrives; a broker that only answers
    when max wait expires would show ~5 s of latency here.
    """
    import threading

    topic = create_topic(broker, "ck-longpoll", 1)
    producer = make_producer(broker, linger_ms=0)
    produce(producer, topic, [Rec(None, b"warm-up", (), 1_750_000_000_000, 0)])
    stats: list[dict] = []
    consumer = make_consumer(broker, fetch_wait_max_ms=5000, enable_partition_eof=False,
                             statistics_interval_ms=100, stats_cb=lambda s: stats.append(json.loads(s)))

    def parked() -> bool:
        """librdkafka fetches the partition and awaits a broker's answer (our fetch, parked)."""
        if not stats:
            return False
        partition = stats[-1]["topics"].get(topic, {}).get("partitions", {}).get("0", {})
        return partition.get("fetch_state") == "active" and any(
            b["waitresp_cnt"] > 0 for b in stats[-1]["brokers"].values() if b["nodeid"] >= 0)

    try:
        consumer.assign([TopicPartition(topic, 0, 1)])
        got: list = []

        def poll():
            deadline = time.monotonic() + 20
            while not got and time.monotonic() < deadline:
                msg = consumer.poll(0.05)
                if msg is not None and not msg.error():
                    got.append((time.monotonic(), msg.offset(), msg.value()))

        reader = threading.Thread(target=poll)
        reader.start()
        wait_until(parked, "the consumer inside a parked fetch")
        sent_at = time.monotonic()
        produce(producer, topic, [Rec(None, b"wake up", (), 1_750_000_000_001, 0)])
        reader.join(25)
        assert got, "the new record never arrived"
        arrived, offset, value = got[0]
        assert (offset, value) == (1, b"wake up")
        assert arrived - sent_at < 2.0, f"record took {arrived - sent_at:.2f}s: fetch not woken by the append"
    finally:
        consumer.close()
