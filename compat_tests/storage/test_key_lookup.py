"""Lookup by key on a commitlog topic, through the key-lookup topic any client can read
(`__key.<topic>.<base64url key>`, broker/key_topic.py) and through `twinlog lookup`.

The oracle is what was produced: for a key, exactly the records that carried it, with the
offsets the producer was acknowledged, their values, headers and timestamps, in every
partition, whether the producer compressed its batches or not.
"""

from __future__ import annotations

import subprocess
import time
from collections import defaultdict

import pytest
from confluent_kafka import Consumer, TopicPartition as CTopicPartition
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from broker.key_topic import name_for, topic_id_for
from compat_tests.helpers.broker_process import ROOT
from compat_tests.helpers.raw_kafka import Client, fetch_values, make_batch, read_records
from compat_tests.helpers.topics import create_topic, unique_topic

PARTITIONS = 3
KEYS = [b"alice", b"bob", b"carol", b"\x00\xffbinary"]
NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION, UNKNOWN_TOPIC_ID = 0, 3, 17, 100
FETCH_BY_ID_VERSIONS = range(13, 19)  # KIP-516: Fetch v13+ names topics by id only


@pytest.fixture(scope="module")
def keyed_topic(_module_broker):
    """A commitlog topic with 120 keyed records (gzip and uncompressed batches), and the oracle:
    {key: [(partition, offset, value, headers, timestamp)]}."""
    broker = _module_broker
    topic = create_topic(broker.bootstrap, unique_topic("keyed"), PARTITIONS, {"storage.mode": "commitlog"})
    expected = defaultdict(list)
    for codec in (None, "gzip"):
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=50, compression_type=codec)
        sent = []
        for i in range(60):
            key = KEYS[i % len(KEYS)]
            value, headers, ts = b"v%d-%s" % (i, str(codec).encode()), [("n", b"%d" % i)], 1_700_000_000_000 + i
            sent.append((key, value, headers, ts, producer.send(topic, key=key, value=value, headers=headers,
                                                                timestamp_ms=ts, partition=i % PARTITIONS)))
        producer.flush(30)
        for key, value, headers, ts, fut in sent:
            md = fut.get(30)
            expected[key].append((md.partition, md.offset, value, tuple(headers), ts))
        producer.close()
    return topic, {k: sorted(v) for k, v in expected.items()}


def read_with_kafka_python(broker, name: str, partitions: int = PARTITIONS) -> list[tuple]:
    # Assigned by number: kafka-python looks topics up in an all-topics Metadata answer,
    # which does not list key-lookup topics (they are answered when named).
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tps = [TopicPartition(name, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        out, deadline = [], time.monotonic() + 20
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline
            for records in consumer.poll(timeout_ms=200).values():
                out += [(r.partition, r.offset, r.value, tuple(r.headers), r.timestamp) for r in records]
        return sorted(out)
    finally:
        consumer.close()


def read_with_confluent(broker, name: str, partitions: int) -> list[tuple]:
    """librdkafka reports partition EOF when its fetch position reaches the high watermark,
    which it only does by following the batches' offset spans past the last match."""
    from confluent_kafka import KafkaError as CKafkaError

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "key-lookup-reader",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        c.assign([CTopicPartition(name, p, -2) for p in range(partitions)])
        out, at_end, deadline = [], set(), time.monotonic() + 20
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"partition EOF seen for {at_end} only"
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == CKafkaError._PARTITION_EOF, m.error()
                at_end.add(m.partition())
                continue
            out.append((m.partition(), m.offset(), m.value(), tuple(m.headers() or ()), m.timestamp()[1]))
        return sorted(out)
    finally:
        c.close()


@pytest.mark.parametrize("key", KEYS)
def test_key_topic_serves_exactly_the_records_of_the_key(broker, keyed_topic, key):
    topic, expected = keyed_topic
    assert read_with_kafka_python(broker, name_for(topic, key)) == expected[key]


def test_key_topic_with_librdkafka(broker, keyed_topic):
    topic, expected = keyed_topic
    assert read_with_confluent(broker, name_for(topic, b"bob"), PARTITIONS) == expected[b"bob"]


def _fetch_by_id(c: Client, name: str, topic_id, version: int):
    r = c.request(1, version, **fetch_values([(name, [(p, 0, 1 << 20) for p in range(PARTITIONS)])],
                                             topic_ids={name: topic_id}))
    (t,) = r.responses
    assert t.topic_id == topic_id
    return t.partitions


@pytest.mark.parametrize("version", FETCH_BY_ID_VERSIONS)
def test_key_topic_fetched_by_its_id(broker, keyed_topic, version):
    """librdkafka fetches with v16 and kafka-python with v18, naming the topic by the id Metadata
    gave them: the key's records, and the source's offsets, so that a consumer sees the end."""
    topic, expected = keyed_topic
    name = name_for(topic, b"bob")
    with Client.to(broker) as c:
        topic_id = c.topic_id(name)
        assert topic_id == topic_id_for(name)
        bounds = {p: (c.list_offset(topic, p, -2).offset, c.log_end_offset(topic, p)) for p in range(PARTITIONS)}
        partitions = _fetch_by_id(c, name, topic_id, version)
    got = []
    for p in partitions:
        start, end = bounds[p.partition_index]
        assert (p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset) == (NONE, end, end, start)
        got += [(p.partition_index, offset, value) for offset, _ts, _key, value in read_records(p.records)]
    assert sorted(got) == [(part, offset, value) for part, offset, value, _h, _ts in expected[b"bob"]]


def test_a_key_topic_id_is_known_once_its_name_was_asked(broker, keyed_topic):
    """The id is a hash of the name: a broker resolves it only after it served the name (a client
    asks Metadata by name first, and again on UNKNOWN_TOPIC_ID). By id it is as read-only."""
    topic, _ = keyed_topic
    name = name_for(topic, b"asked-late")
    topic_id = topic_id_for(name)
    with Client.to(broker) as c:
        assert {p.error_code for p in _fetch_by_id(c, name, topic_id, 18)} == {UNKNOWN_TOPIC_ID}
        assert c.topic_id(name) == topic_id
        assert {p.error_code for p in _fetch_by_id(c, name, topic_id, 18)} == {NONE}
        (md,) = c.request(3, 13, topics=[{"name": None, "topic_id": topic_id}], allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False).topics
        assert (md.error_code, md.name, len(md.partitions)) == (NONE, name, PARTITIONS)
        assert c.produce(name, 0, make_batch([b"x"]), version=13).error_code == INVALID_TOPIC_EXCEPTION


def test_unknown_key_reads_empty(broker, keyed_topic):
    topic, _ = keyed_topic
    assert read_with_kafka_python(broker, name_for(topic, b"nobody")) == []


def test_lookup_command_prints_the_records(broker, keyed_topic):
    topic, expected = keyed_topic
    out = subprocess.run([str(ROOT / ".venv" / "bin" / "twinlog"), "lookup", "--bootstrap", broker.bootstrap,
                          "--topic", topic, "--key", "carol"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert [(int(p), int(o), v) for p, o, _ts, v in rows] == [
        (p, o, v.decode()) for p, o, v, _h, _t in expected[b"carol"]]
    assert f"{len(expected[b'carol'])} record(s)" in out.stderr


def test_lookup_command_on_a_segment_topic_is_one_line(broker):
    topic = create_topic(broker.bootstrap, unique_topic("plain"), 1, {"storage.mode": "segment"})
    out = subprocess.run([str(ROOT / ".venv" / "bin" / "twinlog"), "lookup", "--bootstrap", broker.bootstrap,
                          "--topic", topic, "--key", "carol"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip() == f"Error: no key lookup for topic {topic!r}: it does not use storage.mode=commitlog"


def test_key_topic_is_read_only_and_reserved(broker, keyed_topic):
    topic, _ = keyed_topic
    name = name_for(topic, b"alice")
    with Client.to(broker) as c:
        p = c.produce(name, 0, make_batch([b"x"]))
        assert p.error_code == INVALID_TOPIC_EXCEPTION
        r = c.request(19, 7, validate_only=False, timeout=10_000, topics=[{
            "name": name_for("elsewhere", b"k"), "num_partitions": 1, "replication_factor": 1,
            "assignments": [], "configs": []}])
        assert r.topics[0].error_code == INVALID_TOPIC_EXCEPTION
    with pytest.raises(KafkaError):
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, max_block_ms=5000, retries=0)
        try:
            producer.send(name, key=b"alice", value=b"forged").get(10)
        finally:
            producer.close()
    assert read_with_kafka_python(broker, name)[-1][2] != b"forged"


def test_no_key_topic_for_segment_topics(broker):
    plain = unique_topic("plain")
    with Client.to(broker) as c:
        c.create_topic(plain, 1, {"storage.mode": "segment"})
        (md,) = c.metadata([name_for(plain, b"alice")]).topics
        assert md.error_code == UNKNOWN_TOPIC_OR_PARTITION
        # Auto-creation does not make a real topic of a reserved name.
        (md,) = c.metadata([name_for(plain, b"alice")], allow_auto=True).topics
        assert md.error_code == INVALID_TOPIC_EXCEPTION
        assert not any(t.name.startswith("__key.") for t in c.metadata(None).topics)


def test_deleted_records_leave_the_lookup(broker, keyed_topic):
    topic, expected = keyed_topic
    first_partition, first_offset = expected[b"alice"][0][:2]
    with Client.to(broker) as c:
        r = c.request(21, 2, timeout=10_000, topics=[{"name": topic, "partitions": [
            {"partition_index": first_partition, "offset": first_offset + 1}]}])
        assert r.topics[0].partitions[0].error_code == 0
    assert read_with_kafka_python(broker, name_for(topic, b"alice")) == expected[b"alice"][1:]
