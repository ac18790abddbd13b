"""Kafka 4's topic configs, each through CreateTopics, IncrementalAlterConfigs and DescribeConfigs
with a real admin client (confluent-kafka), and what the ones with an effect do on a live broker:
flush.ms sets a partition's fsync cadence (strace counts the fsyncs), and
message.timestamp.before/after.max.ms refuse records out of range, each named by its batch
index (Produce v8+ record_errors), which the Java producer hands to the one record that was bad.
max.message.bytes is exercised by test_bad_input.py and test_config_admin_protocol_versions.py.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic

from compat_tests.helpers.fsync_trace import FsyncTrace
from compat_tests.helpers.java_client import check_command
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.served_versions import versions
from compat_tests.helpers.topics import unique_topic

LONG_MAX = str(2**63 - 1)
HOUR = 3_600_000
INVALID_RECORD, INVALID_TIMESTAMP, INVALID_CONFIG = 87, 32, 40
SET, DELETE = 0, 1

# name: (created with, altered to, Kafka's type, default, broker synonym or None)
CONFIGS = {
    "flush.ms": ("500", "250", "LONG", LONG_MAX, "log.flush.interval.ms"),
    "file.delete.delay.ms": ("1000", "2000", "LONG", "60000", "log.segment.delete.delay.ms"),
    "unclean.leader.election.enable": ("true", "false", "BOOLEAN", "false", "unclean.leader.election.enable"),
    "segment.jitter.ms": ("1000", "2000", "LONG", "0", None),
    "segment.index.bytes": ("4096", "8192", "INT", str(10 << 20), None),
    "index.interval.bytes": ("1024", "2048", "INT", "4096", "log.index.interval.bytes"),
    "max.message.bytes": ("100000", "200000", "INT", str((1 << 20) + 12), "message.max.bytes"),
    "min.compaction.lag.ms": ("10", "20", "LONG", "0", None),
    "preallocate": ("true", "false", "BOOLEAN", "false", None),
    "message.timestamp.type": ("LogAppendTime", "CreateTime", "STRING", "CreateTime", None),
    "message.timestamp.before.max.ms": ("86400000", "3600000", "LONG", LONG_MAX, None),
    "message.timestamp.after.max.ms": ("86400000", "7200000", "LONG", str(HOUR), None),  # Kafka 4: 1 h
    "compression.gzip.level": ("5", "9", "INT", "-1", None),
    "compression.lz4.level": ("3", "17", "INT", "9", None),
    "compression.zstd.level": ("-5", "22", "INT", "3", None),
    "leader.replication.throttled.replicas": ("0:1,1:1", "*", "LIST", "", None),
    "follower.replication.throttled.replicas": ("*", "0:1", "LIST", "", None),
    "remote.storage.enable": ("false", "false", "BOOLEAN", "false", None),
    "local.retention.ms": ("-1", "3600000", "LONG", "-2", None),
    "local.retention.bytes": ("-1", "1048576", "LONG", "-2", None),
    "remote.log.copy.disable": ("true", "false", "BOOLEAN", "false", None),
    "remote.log.delete.on.disable": ("true", "false", "BOOLEAN", "false", None),
}
TYPES = {1: "BOOLEAN", 2: "STRING", 3: "INT", 5: "LONG", 7: "LIST"}  # DescribeConfigs v3+ config_type


def _described(admin: AdminClient, topic: str) -> dict:
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([res], request_timeout=15)[res].result(15)


def _types_and_synonyms(broker, topic: str) -> dict[str, tuple[str, list[tuple[str, str, int]]]]:
    """Raw DescribeConfigs v4: {name: (Kafka type, [(synonym, value, source)])}. confluent-kafka
    keys synonyms by name, so it shows one of a topic config and a broker setting that share
    their name (unclean.leader.election.enable)."""
    with Client.to(broker) as c:
        r = c.request(32, 4, include_synonyms=True, include_documentation=False, resources=[
            {"resource_type": 2, "resource_name": topic, "configuration_keys": None}])
    (res,) = r.results
    return {e.name: (TYPES.get(e.config_type, str(e.config_type)), [(y.name, y.value, y.source) for y in e.synonyms])
            for e in res.configs}


def _incremental(admin: AdminClient, topic: str, op, values: dict[str, str | None]) -> None:
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op) for name, value in values.items()])
    admin.incremental_alter_configs([res])[res].result(15)


def test_every_kafka4_topic_config_round_trips_with_its_type_source_and_synonyms(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = unique_topic("kafka4-configs")
    created = {name: row[0] for name, row in CONFIGS.items()}
    admin.create_topics([NewTopic(topic, 1, 1, config=created)])[topic].result(15)

    described = _described(admin, topic)
    raw = _types_and_synonyms(broker, topic)
    for name, (value, _altered, kafka_type, default, synonym) in CONFIGS.items():
        entry = described[name]
        assert (entry.value, entry.source) == (value, ConfigSource.DYNAMIC_TOPIC_CONFIG.value), (name, entry)
        got_type, synonyms = raw[name]
        assert got_type == kafka_type, name
        # The topic's own value first, then the broker setting it defaults to, as Kafka lists them
        expected = [(name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG.value)]
        if synonym is not None:
            expected.append((synonym, default, ConfigSource.DEFAULT_CONFIG.value))
        assert synonyms == expected, name

    _incremental(admin, topic, AlterConfigOpType.SET, {name: row[1] for name, row in CONFIGS.items()})
    described = _described(admin, topic)
    assert {name: described[name].value for name in CONFIGS} == {name: row[1] for name, row in CONFIGS.items()}

    _incremental(admin, topic, AlterConfigOpType.DELETE, {name: None for name in CONFIGS})
    described = _described(admin, topic)
    for name, (_v, _a, _t, default, _s) in CONFIGS.items():
        entry = described[name]
        assert (entry.value, entry.source) == (default, ConfigSource.DEFAULT_CONFIG.value), (name, entry)


@pytest.mark.parametrize("name, value, reason", [
    ("remote.storage.enable", "true", "Tiered Storage functionality is disabled in the broker"),
    ("leader.replication.throttled.replicas", "0-1", "must be the literal '*' or a list of replicas"),
    ("compression.lz4.level", "18", "18 is not in [1, 17]"),
    ("message.timestamp.after.max.ms", "-1", "-1 is not at least 0"),
    ("message.downconversion.enable", "true", "Unknown topic config name"),  # gone in Kafka 4.0
])
def test_a_value_kafka_refuses_is_invalid_config(broker, name, value, reason):
    with Client.to(broker) as c:
        r = c.request(19, 7, validate_only=False, timeout=10_000, topics=[{
            "name": unique_topic("refused"), "num_partitions": 1, "replication_factor": 1, "assignments": [],
            "configs": [{"name": name, "value": value}]}])
    (t,) = r.topics
    assert t.error_code == INVALID_CONFIG and reason in t.error_message, t


# ----- flush.ms: the fsync cadence, counted with strace -------------------------------------

def _fsyncs_of(fsyncs, broker, topic: str) -> int:
    """How many of the traced fsyncs were of the files holding `topic`-0."""
    data = str(broker.data_dir)
    if broker.storage_mode == "segment":
        ours = lambda path: path.startswith(data) and f"/{topic}-0/" in path and path.endswith(".log")  # noqa: E731
    else:  # every partition's records are in the one commitlog
        ours = lambda path: path.startswith(data) and "/commitlog-store/commitlog/" in path  # noqa: E731
    return sum(1 for f in fsyncs if ours(f.path))


def _produce_for(c: Client, topics: list[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for topic in topics:
            assert c.produce(topic, 0, make_batch([b"r"]), acks=1).error_code == 0
        time.sleep(0.05)  # paces the producer: the cadence under test is the broker's


def test_flush_ms_sets_a_topics_fsync_cadence(fresh_broker, tmp_path):
    """Without flush.ms nothing fsyncs the topic's log while records arrive (the page cache
    holds them); once IncrementalAlterConfigs sets flush.ms=100 the broker fsyncs it about ten
    times a second. Three in 1.5 s is the floor a loaded machine still clears."""
    topic = unique_topic("flush-ms")
    with Client.to(fresh_broker) as c:
        c.create_topic(topic, 1)
        trace = FsyncTrace(fresh_broker.pid, tmp_path / "before.txt")
        _produce_for(c, [topic], 1.0)
        assert _fsyncs_of(trace.stop(), fresh_broker, topic) == 0
        r = c.request(44, 1, validate_only=False, resources=[{"resource_type": 2, "resource_name": topic, "configs": [
            {"name": "flush.ms", "config_operation": SET, "value": "100"}]}])
        assert r.responses[0].error_code == 0, r
        trace = FsyncTrace(fresh_broker.pid, tmp_path / "after.txt")
        _produce_for(c, [topic], 1.5)
        assert _fsyncs_of(trace.stop(), fresh_broker, topic) >= 3


def test_flush_ms_of_one_topic_and_its_neighbour(fresh_broker, tmp_path):
    """Segment layout: each partition has its own files, and a topic without flush.ms is not
    fsynced because its neighbour is. Commitlog layout: both topics' records are in the one
    commitlog, which the neighbour's flush.ms fsyncs for both (docs/configuration.md)."""
    fast, slow = unique_topic("flush-fast"), unique_topic("flush-slow")
    with Client.to(fresh_broker) as c:
        c.create_topic(fast, 1, {"flush.ms": "100"})
        c.create_topic(slow, 1)
        trace = FsyncTrace(fresh_broker.pid, tmp_path / "both.txt")
        _produce_for(c, [fast, slow], 1.5)
        fsyncs = trace.stop()
    assert _fsyncs_of(fsyncs, fresh_broker, fast) >= 3  # commitlog: the file both topics' records are in
    if fresh_broker.storage_mode == "segment":
        assert _fsyncs_of(fsyncs, fresh_broker, slow) == 0


# ----- message.timestamp.*.max.ms and record_errors --------------------------------------------

def _bounded_topic(c: Client, **extra: str) -> str:
    topic = unique_topic("ts-bounds")
    c.create_topic(topic, 1, {"message.timestamp.before.max.ms": str(HOUR),
                              "message.timestamp.after.max.ms": str(HOUR), **extra})
    return topic


@pytest.mark.parametrize("version", versions(0, 3))
def test_out_of_range_timestamps_refuse_the_batch_naming_each_record(broker, version):
    with Client.to(broker) as c:
        topic = _bounded_topic(c)
        now = int(time.time() * 1000)
        bad = make_batch([b"ok", b"old", b"new"], timestamps=[now, now - 2 * HOUR, now + 2 * HOUR])
        p = c.produce(topic, 0, bad, version=version)
        assert p.error_code == INVALID_TIMESTAMP, p
        if version >= 8:
            assert p.error_message == "One or more records have been rejected due to invalid timestamp"
            assert [e.batch_index for e in p.record_errors] == [1, 2]
            assert "of message with offset 1 is out of range" in p.record_errors[0].batch_index_error_message
        assert c.log_end_offset(topic) == 0  # nothing of the batch is stored
        assert c.produce(topic, 0, make_batch([b"in range"], timestamps=[now - HOUR // 2]),
                         version=version).error_code == 0


def test_a_default_topic_refuses_records_more_than_an_hour_ahead(broker):
    """Kafka 4's default message.timestamp.after.max.ms is one hour (KIP-1030) and before is
    unbounded: a topic created with no configs takes a week-old record and one 50 minutes
    ahead, and refuses one two hours ahead, through a real client (librdkafka)."""
    with Client.to(broker) as c:
        topic = unique_topic("ts-default")
        c.create_topic(topic, 1, {})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "retries": 0,
                         "enable.idempotence": False})
    reports = {}
    now = int(time.time() * 1000)
    for value, ts in ((b"week old", now - 7 * 24 * HOUR), (b"50 min ahead", now + 50 * 60_000),
                      (b"2 h ahead", now + 2 * HOUR)):
        producer.produce(topic, value=value, partition=0, timestamp=ts,
                         on_delivery=lambda err, msg: reports.__setitem__(msg.value(), err))
        assert producer.flush(15) == 0  # each its own batch
    assert {v: err and err.code() for v, err in reports.items()} == {
        b"week old": None, b"50 min ahead": None, b"2 h ahead": KafkaError.INVALID_TIMESTAMP}


@pytest.mark.parametrize("version", versions(0, 8))
def test_keyless_records_on_a_compacted_topic_are_named(broker, version):
    with Client.to(broker) as c:
        topic = unique_topic("keyless")
        c.create_topic(topic, 1, {"cleanup.policy": "compact"})
        p = c.produce(topic, 0, make_batch([b"a", b"b", b"c"], keys=[b"k", None, b"k"]), version=version)
    assert p.error_code == INVALID_RECORD, p
    assert [e.batch_index for e in p.record_errors] == [1]
    assert p.error_message.startswith("One or more records have been rejected due to 1 record errors in total")
    assert f"Compacted topic cannot accept message without key in topic partition {topic}-0." in p.error_message


def test_the_java_producer_fails_the_bad_record_with_its_reason_and_the_rest_as_collateral(broker):
    """kafka-clients 4.3 (java/RecordErrorsCheck.java) reads record_errors: the record named
    fails with InvalidTimestampException and the broker's reason for it, the others of its
    batch with the client's "part of a batch which had one more more invalid records"."""
    with Client.to(broker) as c:
        topic = _bounded_topic(c)
    now = int(time.time() * 1000)
    run = subprocess.run(check_command("RecordErrorsCheck", broker.bootstrap, topic, str(now), str(now - 2 * HOUR), str(now)),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    first, bad, last = json.loads(run.stdout.strip().splitlines()[-1])["records"]
    assert bad["exception"] == "InvalidTimestampException"
    assert f"Timestamp {now - 2 * HOUR} of message with offset 1 is out of range" in bad["message"]
    for other in (first, last):
        assert "offset" not in other and "invalid records" in other["message"], other


def test_librdkafka_fails_every_record_of_the_batch_with_the_batch_error(broker):
    """librdkafka 2.16 reads record_errors but reports the partition's error for every record."""
    with Client.to(broker) as c:
        topic = _bounded_topic(c)
    # A linger far past the three produce() calls, so they are one batch however loaded the
    # machine (200 ms once split them); flush() sends it at once. The partition's leader is known
    # first: a Metadata answer arriving between two produce() calls can move the first record to its
    # partition's queue alone, and flush() send it as a batch of its own (a full run, load ~7).
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 10_000, "retries": 0,
                         "enable.idempotence": False})
    producer.list_topics(topic, timeout=15)
    reports = {}
    now = int(time.time() * 1000)
    for i, ts in enumerate([now, now - 2 * HOUR, now]):  # one batch: linger holds them together
        producer.produce(topic, value=b"r%d" % i, partition=0, timestamp=ts,
                         on_delivery=lambda err, msg: reports.__setitem__(msg.value(), err))
    assert producer.flush(15) == 0
    assert {v: err.code() for v, err in reports.items()} == dict.fromkeys((b"r0", b"r1", b"r2"),
                                                                         KafkaError.INVALID_TIMESTAMP)
