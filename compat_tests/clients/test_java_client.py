"""The Apache Kafka Java client (kafka-clients 4.3.0) against a real broker process.

One ClientCheck JVM (java/ClientCheck.java, driven through java_client.py) serves every test
of a module; each op creates and closes its own producer, consumer or Admin. Consumers use
assign() + seek, with no group.id: group coordination is tested elsewhere. Producers run with
the Java defaults, idempotence on and acks=all, restated explicitly so that a broker without
InitProducerId fails the produce instead of the client quietly falling back.

What Java writes is also read back by kafka-python, and what kafka-python writes is read by
Java, so a broker bug that both directions of one client would hide still shows.
"""

from __future__ import annotations

import socket
import struct
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from compat_tests.helpers.java_client import JavaClient, JavaOpError, b64, unb64
from compat_tests.helpers.records import BASE_TS, PARTITIONS, Consumed, Rec, Sent, assert_round_trip, round_trip_records
from compat_tests.helpers.topics import create_topic, unique_topic
from compat_tests.helpers.waiting import wait_until

pytestmark = pytest.mark.timeout(240)

# The Java producer's defaults since Kafka 3.0, stated so they are checked, not assumed.
JAVA_PRODUCER_DEFAULTS = {"enable.idempotence": "true", "acks": "all"}
CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}  # name -> record batch attributes bits 0-2
NO_OFFSET = -1  # ListOffsets' answer when no record has a timestamp >= the query


@pytest.fixture(scope="module")
def _jvms():
    """One ClientCheck JVM per broker address for the whole module (a JVM start costs ~1 s)."""
    clients: dict[str, JavaClient] = {}
    yield clients
    for client in clients.values():
        client.close()


@pytest.fixture
def java(broker, _jvms, tmp_path_factory) -> JavaClient:
    client = _jvms.get(broker.bootstrap)
    if client is None:
        client = _jvms[broker.bootstrap] = JavaClient(broker.bootstrap, compression_jars=True,
                                                      log_dir=tmp_path_factory.mktemp("clientcheck"))
        assert client.call("version") == "4.3.0", "not the kafka-clients jar these tests are written for"
    return client


# ---- helpers ----------------------------------------------------------------------------------

def java_records(recs: list[Rec]) -> list[dict]:
    return [{"partition": r.partition, "timestamp": r.timestamp, "key": b64(r.key), "value": b64(r.value),
             "headers": [[k, b64(v)] for k, v in r.headers]} for r in recs]


def java_produce(java, topic: str, recs: list[Rec], **config) -> list[Sent]:
    acks = java.call("produce", topic=topic, records=java_records(recs),
                     config={**JAVA_PRODUCER_DEFAULTS, **config})
    errors = [(i, a["error"]) for i, a in enumerate(acks) if "error" in a]
    assert not errors, f"{len(errors)} of {len(recs)} sends failed, first: {errors[:3]}"
    bad_ts = [(i, a["timestamp"], r.timestamp) for i, (a, r) in enumerate(zip(acks, recs))
              if a["timestamp"] != r.timestamp]
    assert not bad_ts, f"acked CreateTime timestamps differ from the sent ones (index, acked, sent): {bad_ts[:5]}"
    return [Sent(r, a["partition"], a["offset"]) for r, a in zip(recs, acks)]


def java_consume(java, topic: str, count: int, seek="beginning", partitions=None, **config) -> dict:
    return java.call("consume", topic=topic, count=count, seek=seek, partitions=partitions,
                     timeoutMs=20000, config=config)


def as_consumed(java_result: dict) -> list[Consumed]:
    out = []
    for r in java_result["records"]:
        assert r["timestampType"] == "CreateTime", f"p{r['partition']}@{r['offset']}: {r['timestampType']}"
        out.append(Consumed(r["partition"], r["offset"], unb64(r["key"]), unb64(r["value"]),
                            tuple((k, unb64(v)) for k, v in r["headers"]), r["timestamp"]))
    return out


def kp_consume(broker, topic: str, partitions: int, expected: int, timeout: float = 20.0) -> list[Consumed]:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                             check_crcs=True, client_id="compat-java-crosscheck", request_timeout_ms=15000)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        out: list[Consumed] = []
        deadline = time.monotonic() + timeout
        while len(out) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                out.extend(Consumed(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()),
                                    m.timestamp, m.timestamp_type) for m in batch)
        for batch in consumer.poll(timeout_ms=300).values():  # extras are duplicates or phantoms
            out.extend(Consumed(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()),
                                m.timestamp, m.timestamp_type) for m in batch)
        return out
    finally:
        consumer.close()


def kp_produce(broker, topic: str, recs: list[Rec]) -> list[Sent]:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, client_id="compat-java-crosscheck",
                             enable_idempotence=False, acks="all", linger_ms=50, request_timeout_ms=15000,
                             max_block_ms=15000)
    try:
        futures = [(r, producer.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                     timestamp_ms=r.timestamp, partition=r.partition)) for r in recs]
        producer.flush(30)
        return [Sent(r, md.partition, md.offset) for r, md in ((r, f.get(timeout=30)) for r, f in futures)]
    finally:
        producer.close()


def per_partition_counts(sent: list[Sent], partitions: int) -> dict[str, int]:
    counts = {str(p): 0 for p in range(partitions)}
    for s in sent:
        counts[str(s.partition)] += 1
    return counts


def fetch_batch_codecs(host: str, port: int, topic: str, partition: int) -> list[int]:
    """Raw Fetch v4 from offset 0; the compression codec (attributes & 7) of every batch returned.

    Clients decompress transparently, so only the stored batches show whether the broker kept
    what the producer compressed. v4 is the oldest Fetch Kafka 4 serves, and is not flexible.
    """
    t = topic.encode()
    body = struct.pack(">iiiib", -1, 2000, 1, 8 << 20, 0) + struct.pack(">ih", 1, len(t)) + t
    body += struct.pack(">iiqi", 1, partition, 0, 8 << 20)
    client_id = b"compat-java-rawfetch"
    header = struct.pack(">hhih", 1, 4, 4242, len(client_id)) + client_id
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        size = struct.unpack(">i", _recv(s, 4))[0]
        resp = _recv(s, size)
    pos = 4 + 4  # correlation id, throttle_time_ms
    (n_topics,) = struct.unpack_from(">i", resp, pos); pos += 4
    assert n_topics == 1, f"Fetch v4: {n_topics} topics in reply"
    (tlen,) = struct.unpack_from(">h", resp, pos); pos += 2 + tlen
    (n_parts,) = struct.unpack_from(">i", resp, pos); pos += 4
    assert n_parts == 1, f"Fetch v4: {n_parts} partitions in reply"
    _, error_code, _hw, _lso = struct.unpack_from(">ihqq", resp, pos); pos += 22
    assert error_code == 0, f"Fetch v4 error code {error_code}"
    (n_aborted,) = struct.unpack_from(">i", resp, pos); pos += 4 + max(n_aborted, 0) * 16
    (rec_len,) = struct.unpack_from(">i", resp, pos); pos += 4
    records, codecs, off = resp[pos:pos + max(rec_len, 0)], [], 0
    while off + 61 <= len(records):  # 61: the fixed v2 batch header
        _base, batch_len = struct.unpack_from(">qi", records, off)
        if off + 12 + batch_len > len(records):
            break  # a partial batch at the end of max_bytes
        (attributes,) = struct.unpack_from(">h", records, off + 21)
        codecs.append(attributes & 7)
        off += 12 + batch_len
    return codecs


def _recv(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


# ---- data round trips -------------------------------------------------------------------------

def test_java_round_trip_and_kafka_python_reads_it(java, broker):
    """Keys, values (null and empty), headers (duplicate, null, non-ASCII), timestamps, 3 partitions."""
    topic = create_topic(broker.bootstrap, unique_topic("java-rt"), PARTITIONS)
    recs = round_trip_records()  # the Java API accepts every edge case: null key+value, null header values
    sent = java_produce(java, topic, recs)

    result = java_consume(java, topic, len(recs))
    assert_round_trip(sent, as_consumed(result))
    assert result["positions"] == per_partition_counts(sent, PARTITIONS), "positions after reading everything"

    # The same bytes, read by another client: kafka-python.
    assert_round_trip(sent, kp_consume(broker, topic, PARTITIONS, len(recs)))


def test_kafka_python_writes_java_reads(java, broker):
    topic = create_topic(broker.bootstrap, unique_topic("kp-to-java"), PARTITIONS)
    recs = round_trip_records(null_header_values=False, null_key_and_value=False)  # kafka-python refuses both
    sent = kp_produce(broker, topic, recs)
    assert_round_trip(sent, as_consumed(java_consume(java, topic, len(recs))))


def test_seek_into_the_middle_of_a_batch(java, broker):
    """A fetch from inside a batch returns the whole batch; the Java client must start exactly at the seek."""
    topic = create_topic(broker.bootstrap, unique_topic("java-seek"), 1)
    recs = [Rec(f"k{i}".encode(), f"v{i}".encode(), (), BASE_TS + i, 0) for i in range(20)]
    sent = java_produce(java, topic, recs, **{"linger.ms": "200"})
    assert [s.offset for s in sent] == list(range(20))
    result = java_consume(java, topic, 13, seek={"0": 7})
    got = [(r["offset"], unb64(r["value"])) for r in result["records"]]
    assert got == [(i, f"v{i}".encode()) for i in range(7, 20)]
    assert result["positions"] == {"0": 20}
    assert set(fetch_batch_codecs(broker.host, broker.port, topic, 0)) == {0}, "uncompressed batches stored as such"


@pytest.mark.parametrize("codec", list(CODECS))
def test_compression_codec(java, broker, codec):
    """Java compresses; the broker must store the compressed batches as they came and serve them back."""
    topic = create_topic(broker.bootstrap, unique_topic(f"java-{codec}"), PARTITIONS)
    recs = round_trip_records()
    recs += [Rec(f"c{i}".encode(), f"compressible value {i % 10} ".encode() * 40, (("i", str(i).encode()),),
                 BASE_TS + 1000 + i, i % PARTITIONS) for i in range(300)]
    try:
        sent = java_produce(java, topic, recs, **{"compression.type": codec, "linger.ms": "100"})
    except JavaOpError as e:
        if "NoClassDefFoundError" in e.trace:  # kafka-clients loads the codec when the producer is built
            pytest.fail(f"the {codec} library jar is not on the Java classpath (see java_client.py):\n{e.trace}",
                        pytrace=False)
        raise
    assert_round_trip(sent, as_consumed(java_consume(java, topic, len(recs))))
    assert_round_trip(sent, kp_consume(broker, topic, PARTITIONS, len(recs)))
    for p in range(PARTITIONS):
        codecs = fetch_batch_codecs(broker.host, broker.port, topic, p)
        assert codecs, f"partition {p}: raw Fetch returned no batches"
        assert set(codecs) == {CODECS[codec]}, f"partition {p}: stored batch codecs {codecs}, sent {codec}"


# ---- admin ------------------------------------------------------------------------------------

def test_describe_cluster(java, broker):
    cluster = java.call("describeCluster")
    assert cluster["clusterId"], "empty cluster id"
    assert [(n["host"], n["port"]) for n in cluster["nodes"]] == [(broker.host, broker.port)]
    assert cluster["controller"] is not None
    assert cluster["controller"]["id"] in {n["id"] for n in cluster["nodes"]}


def test_topic_lifecycle(java, broker):
    """createTopics (partitions + configs) -> list/describe/describeConfigs -> createPartitions -> delete."""
    name = unique_topic("java-admin")
    node_id = java.call("describeCluster")["nodes"][0]["id"]
    configs = {"retention.ms": "3600000", "cleanup.policy": "delete", "max.message.bytes": "2000000"}
    created = java.call("createTopics", topics=[{"name": name, "partitions": 3, "replicationFactor": 1,
                                                 "configs": configs}])[name]
    assert created["ok"], created
    assert (created["numPartitions"], created["replicationFactor"]) == (3, 1)
    for k, v in configs.items():
        assert created["configs"].get(k) == v, f"CreateTopics result config {k}"
    assert created["topicId"] != "AAAAAAAAAAAAAAAAAAAAAA", "CreateTopics returned the zero topic id"

    assert name in java.call("listTopics")

    described = java.call("describeTopics", names=[name])[name]
    assert described["ok"], described
    assert described["topicId"] == created["topicId"]
    assert described["internal"] is False
    assert described["partitions"] == [{"partition": p, "leader": node_id, "replicas": [node_id], "isr": [node_id]}
                                       for p in range(3)]

    topic_cfg = java.call("describeConfigs", resources=[{"type": "topic", "name": name}])[f"topic:{name}"]
    assert topic_cfg["ok"], topic_cfg
    for k, v in configs.items():
        entry = topic_cfg["configs"].get(k)
        assert entry is not None, f"describeConfigs lacks {k}"
        assert (entry["value"], entry["source"], entry["isDefault"]) == (v, "DYNAMIC_TOPIC_CONFIG", False), k
    unset = topic_cfg["configs"].get("segment.bytes")
    assert unset is not None, "describeConfigs should list configs left at their default too"
    assert unset["source"] in ("DEFAULT_CONFIG", "STATIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG"), unset

    grown = java.call("createPartitions", counts={name: 5})
    assert grown == {name: {"ok": True}}
    described = java.call("describeTopics", names=[name])[name]
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2, 3, 4]
    sent = java_produce(java, name, [Rec(b"k", b"to new partition 4", (), BASE_TS, 4)])
    assert (sent[0].partition, sent[0].offset) == (4, 0)
    read = java_consume(java, name, 1, partitions=[4])
    assert [(r["offset"], unb64(r["value"])) for r in read["records"]] == [(0, b"to new partition 4")]

    shrink = java.call("createPartitions", counts={name: 2})[name]
    assert not shrink["ok"] and "InvalidPartitionsException" in shrink["error"], shrink

    assert java.call("deleteTopics", names=[name]) == {name: {"ok": True}}
    wait_until(lambda: name not in java.call("listTopics"), f"{name} gone from listTopics", timeout=10)
    gone = java.call("describeTopics", names=[name])[name]
    assert not gone["ok"] and "UnknownTopicOrPartitionException" in gone["error"], gone
    again = java.call("deleteTopics", names=[name])[name]
    assert not again["ok"] and "UnknownTopicOrPartitionException" in again["error"], again


def test_create_topics_rejections(java, broker):
    """What Kafka refuses, with the exception the Java client maps each error code to."""
    existing = create_topic(broker.bootstrap, unique_topic("java-exists"), 1)
    cases = {
        existing: ({"partitions": 1}, "TopicExistsException"),
        unique_topic("java-zero"): ({"partitions": 0}, "InvalidPartitionsException"),
        unique_topic("java-rf3"): ({"partitions": 1, "replicationFactor": 3}, "InvalidReplicationFactorException"),
        unique_topic("java-badcfg"): ({"partitions": 1, "configs": {"no.such.config": "1"}},
                                      "InvalidConfigurationException"),
        "bad/topic name": ({"partitions": 1}, "InvalidTopicException"),
    }
    topics = [{"name": n, "replicationFactor": 1, **spec} for n, (spec, _) in cases.items()]
    results = java.call("createTopics", topics=topics)
    wrong = {n: results[n] for n, (_, exc) in cases.items()
             if results[n]["ok"] or exc not in results[n]["error"]}
    assert not wrong, f"expected errors {[(n, e) for n, (_, e) in cases.items()]}, got {wrong}"
    listed = java.call("listTopics")
    assert not [n for n in cases if n != existing and n in listed], "a rejected topic was created anyway"


def test_create_topics_validate_only(java, broker):
    name = unique_topic("java-validate")
    result = java.call("createTopics", validateOnly=True,
                       topics=[{"name": name, "partitions": 2, "replicationFactor": 1}])[name]
    assert result["ok"], result
    assert name not in java.call("listTopics"), "validateOnly created the topic"


def test_describe_broker_configs(java, broker):
    node_id = java.call("describeCluster")["nodes"][0]["id"]
    res = java.call("describeConfigs", resources=[{"type": "broker", "name": str(node_id)}])[f"broker:{node_id}"]
    assert res["ok"], res
    assert res["configs"], "no broker configs described"


# ---- offsets by time and position -------------------------------------------------------------

def _timed_topic(java, broker) -> str:
    """p0: two batches, timestamps ascending; p1: empty; p2: one batch with a timestamp going back."""
    topic = create_topic(broker.bootstrap, unique_topic("java-times"), 3)
    t = BASE_TS
    first = java_produce(java, topic, [Rec(None, b"a", (), t + 1000, 0), Rec(None, b"b", (), t + 2000, 0),
                                       Rec(None, b"c", (), t + 3000, 0)])
    second = java_produce(java, topic, [Rec(None, b"d", (), t + 3000, 0), Rec(None, b"e", (), t + 5000, 0)])
    third = java_produce(java, topic, [Rec(None, b"x", (), t + 5000, 2), Rec(None, b"y", (), t + 1000, 2)])
    assert [s.offset for s in first + second] == [0, 1, 2, 3, 4]
    assert [s.offset for s in third] == [0, 1]
    return topic


# query (ms after BASE_TS) -> (offset, timestamp after BASE_TS) of the first record at or after it
P0_BY_TIME = {0: (0, 1000), 1000: (0, 1000), 1500: (1, 2000), 3000: (2, 3000), 4000: (4, 5000),
              5000: (4, 5000), 5001: None}
P2_BY_TIME = {0: (0, 5000), 2000: (0, 5000), 5001: None}


def test_admin_list_offsets(java, broker):
    topic = _timed_topic(java, broker)
    specs = {"0": "earliest", "1": "earliest", "2": "earliest"}
    assert {p: r["offset"] for p, r in java.call("listOffsets", topic=topic, specs=specs).items()} == \
        {"0": 0, "1": 0, "2": 0}
    specs = {"0": "latest", "1": "latest", "2": "latest"}
    assert {p: r["offset"] for p, r in java.call("listOffsets", topic=topic, specs=specs).items()} == \
        {"0": 5, "1": 0, "2": 2}

    for part, table in (("0", P0_BY_TIME), ("2", P2_BY_TIME)):
        for query, want in table.items():
            got = java.call("listOffsets", topic=topic, specs={part: {"timestamp": BASE_TS + query}})[part]
            assert got["ok"], got
            expect = (NO_OFFSET, -1) if want is None else (want[0], BASE_TS + want[1])
            assert (got["offset"], got["timestamp"]) == expect, f"p{part} forTimestamp(BASE+{query})"
    empty = java.call("listOffsets", topic=topic, specs={"1": {"timestamp": BASE_TS}})["1"]
    assert (empty["offset"], empty["timestamp"]) == (NO_OFFSET, -1), empty


def test_admin_list_offsets_max_timestamp(java, broker):
    """OffsetSpec.maxTimestamp (ListOffsets v7+): the record with the largest timestamp, first one on ties."""
    topic = _timed_topic(java, broker)
    got = java.call("listOffsets", topic=topic, specs={"0": "maxTimestamp", "2": "maxTimestamp"})
    assert got["0"]["ok"] and got["2"]["ok"], got
    assert (got["0"]["offset"], got["0"]["timestamp"]) == (4, BASE_TS + 5000), got
    assert (got["2"]["offset"], got["2"]["timestamp"]) == (0, BASE_TS + 5000), got


def test_consumer_offset_lookups(java, broker):
    """KafkaConsumer.beginningOffsets / endOffsets / offsetsForTimes (ListOffsets from the consumer)."""
    topic = _timed_topic(java, broker)
    for part, table in (("0", P0_BY_TIME), ("2", P2_BY_TIME)):
        for query, want in table.items():
            got = java.call("consumerOffsets", topic=topic, partitions=[0, 1, 2],
                            timestamps={part: BASE_TS + query, "1": BASE_TS + query})
            assert got["beginning"] == {"0": 0, "1": 0, "2": 0}
            assert got["end"] == {"0": 5, "1": 0, "2": 2}
            expect = None if want is None else {"offset": want[0], "timestamp": BASE_TS + want[1]}
            actual = got["forTimes"][part]
            if actual is not None:
                actual = {"offset": actual["offset"], "timestamp": actual["timestamp"]}
            assert actual == expect, f"p{part} offsetsForTimes(BASE+{query})"
            assert got["forTimes"]["1"] is None, "an empty partition has no offset for any time"


# ---- broker-side rules the Java client surfaces ----------------------------------------------

def test_log_append_time_topic(java, broker):
    """message.timestamp.type=LogAppendTime: the broker stamps each batch; ack and read agree."""
    name = unique_topic("java-lat")
    created = java.call("createTopics", topics=[{"name": name, "partitions": 1, "replicationFactor": 1,
                                                 "configs": {"message.timestamp.type": "LogAppendTime"}}])[name]
    assert created["ok"], created
    before = int(time.time() * 1000)
    acks = java.call("produce", topic=name, config=JAVA_PRODUCER_DEFAULTS,
                     records=java_records([Rec(None, f"v{i}".encode(), (), BASE_TS + i, 0) for i in range(5)]))
    after = int(time.time() * 1000)
    assert [a.get("offset") for a in acks] == list(range(5)), acks
    stamps = {a["timestamp"] for a in acks}
    assert all(before - 5000 <= ts <= after + 5000 for ts in stamps), f"acked times {stamps} not append times"
    read = java_consume(java, name, 5)["records"]
    assert [r["timestampType"] for r in read] == ["LogAppendTime"] * 5
    assert [r["timestamp"] for r in read] == [a["timestamp"] for a in acks]


def test_record_larger_than_topic_max_message_bytes(java, broker):
    name = unique_topic("java-toolarge")
    created = java.call("createTopics", topics=[{"name": name, "partitions": 1, "replicationFactor": 1,
                                                 "configs": {"max.message.bytes": "10000"}}])[name]
    assert created["ok"], created
    acks = java.call("produce", topic=name, config=JAVA_PRODUCER_DEFAULTS,
                     records=java_records([Rec(None, b"x" * 20_000, (), BASE_TS, 0)]))
    assert "RecordTooLargeException" in acks[0].get("error", ""), acks
    sent = java_produce(java, name, [Rec(None, b"y" * 5_000, (), BASE_TS, 0)])
    assert (sent[0].partition, sent[0].offset) == (0, 0), "the rejected record must not take an offset"


def test_fetch_out_of_range_resets_to_earliest(java, broker):
    topic = create_topic(broker.bootstrap, unique_topic("java-oor"), 1)
    java_produce(java, topic, [Rec(None, f"v{i}".encode(), (), BASE_TS + i, 0) for i in range(5)])
    result = java_consume(java, topic, 5, seek={"0": 100}, **{"auto.offset.reset": "earliest"})
    assert [r["offset"] for r in result["records"]] == [0, 1, 2, 3, 4]
    with pytest.raises(JavaOpError) as err:
        java_consume(java, topic, 1, seek={"0": 100}, **{"auto.offset.reset": "none"})
    assert "OffsetOutOfRange" in err.value.error_class, err.value
