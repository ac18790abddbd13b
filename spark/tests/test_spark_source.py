"""The twinlog source against a real broker, on local Spark: what it reads equals what was written.

Covers the connector's contract: every column of the row schema (headers included), batch
offset bounds, a streaming query that resumes exactly from its checkpoint across a restart,
startingTimestamp, and maxOffsetsPerTrigger's proportional split.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.topics import create_topic, unique_topic

BASE_TS = 1_700_000_000_000


def _reader(spark, broker, **options):
    r = spark.read.format("twinlog").option("kafka.bootstrap.servers", broker.bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def _records(n: int, partitions: int) -> list[dict]:
    out = []
    for i in range(n):
        r = {"value": f"value-{i}".encode() * (1 + i % 3), "partition": i % partitions, "timestamp": BASE_TS + i}
        if i % 4:
            r["key"] = f"key-{i}".encode()
        if i % 3 == 1:
            r["headers"] = [("trace", f"t{i}".encode()), ("trace", None), ("ü", b"\x00\xff")]
        out.append(r)
    return out


def _expected_rows(topic: str, records: list[dict], include_headers: bool = True) -> list[tuple]:
    next_offset: dict[int, int] = {}
    rows = []
    for r in records:
        p = r["partition"]
        off = next_offset.get(p, 0)
        next_offset[p] = off + 1
        row = (r.get("key"), r["value"], topic, p, off, r["timestamp"], 0)
        if include_headers:
            row += (r.get("headers"),)
        rows.append(row)
    return sorted(rows, key=lambda row: (row[3], row[4]))


def _collected(df, include_headers: bool = True) -> list[tuple]:
    cols = ["key", "value", "topic", "partition", "offset", "unix_millis(timestamp) AS ts", "timestampType"]
    if include_headers:
        cols.append("headers")
    rows = []
    for row in df.selectExpr(*cols).collect():
        t = tuple(bytes(v) if isinstance(v, (bytearray, memoryview)) else v for v in row[:7])
        if include_headers:
            t += (None if row[7] is None else [(h.key, None if h.value is None else bytes(h.value)) for h in row[7]],)
        rows.append(t)
    return sorted(rows, key=lambda row: (row[3], row[4]))


def test_batch_read_equals_what_was_produced(spark, broker, topic_factory, produce):
    topic = topic_factory("spark-batch", partitions=3)
    records = _records(60, 3)
    produce(topic, records)
    df = _reader(spark, broker, subscribe=topic, includeHeaders="true")
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>")
    assert df.rdd.getNumPartitions() == 3  # one Spark input partition per Kafka partition
    assert _collected(df) == _expected_rows(topic, records)

    plain = _reader(spark, broker, subscribe=topic)
    assert "headers" not in plain.columns
    assert _collected(plain, include_headers=False) == _expected_rows(topic, records, include_headers=False)


def test_batch_offset_bounds_assign_and_pattern(spark, broker, topic_factory, produce):
    topic = topic_factory("spark-bounds", partitions=2)
    produce(topic, _records(40, 2))  # 20 per partition
    df = _reader(spark, broker, assign=json.dumps({topic: [0, 1]}),
                 startingOffsets=json.dumps({topic: {"0": 5, "1": -2}}),
                 endingOffsets=json.dumps({topic: {"0": 8, "1": -1}}))
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(5, 8)] + [(1, o) for o in range(20)]

    prefix = topic.rsplit("-", 1)[0]
    by_pattern = _reader(spark, broker, subscribePattern=prefix.replace(".", r"\.") + "-[0-9a-f]+")
    assert by_pattern.filter(f"topic = '{topic}'").count() == 40

    with pytest.raises(Exception, match="starting offset can't be latest"):
        _reader(spark, broker, subscribe=topic, startingOffsets="latest").collect()


def test_starting_timestamp(spark, broker, topic_factory, produce):
    topic = topic_factory("spark-ts", partitions=2)
    records = _records(40, 2)  # timestamps BASE_TS + i
    produce(topic, records)
    df = _reader(spark, broker, subscribe=topic, startingTimestamp=str(BASE_TS + 25))
    got = sorted(r[0] for r in df.selectExpr("unix_millis(timestamp)").collect())
    assert got == [BASE_TS + i for i in range(25, 40)]

    # No record at or after the timestamp: the connector fails by default ...
    with pytest.raises(Exception, match="no record has a timestamp"):
        _reader(spark, broker, subscribe=topic, startingTimestamp=str(BASE_TS + 10_000)).collect()
    # ... and starts at latest with startingOffsetsByTimestampStrategy=latest.
    assert _reader(spark, broker, subscribe=topic, startingTimestamp=str(BASE_TS + 10_000),
                   startingOffsetsByTimestampStrategy="latest").count() == 0


def _stream_to_parquet(spark, broker, topic: str, workdir: str, **options):
    reader = (spark.readStream.format("twinlog").option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", topic))
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (reader.load().writeStream.format("parquet")
             .option("path", os.path.join(workdir, "out"))
             .option("checkpointLocation", os.path.join(workdir, "checkpoint"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(180), "availableNow query did not finish"
    assert query.exception() is None, query.exception()
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_stream_resumes_exactly_from_checkpoint(spark, broker, topic_factory, produce, workdir):
    topic = topic_factory("spark-stream", partitions=3)
    first = _records(45, 3)
    produce(topic, first)
    assert sum(_stream_to_parquet(spark, broker, topic, workdir, startingOffsets="earliest")) == 45

    second = [dict(r, value=b"second-" + r["value"]) for r in _records(30, 3)]
    produce(topic, second)
    # startingOffsets only applies to a new query: the restart resumes from the checkpoint.
    assert sum(_stream_to_parquet(spark, broker, topic, workdir, startingOffsets="earliest")) == 30

    out = spark.read.parquet(os.path.join(workdir, "out"))
    got = sorted((r.partition, r.offset, bytes(r.value)) for r in out.select("partition", "offset", "value").collect())
    expected = sorted((row[3], row[4], row[1]) for row in _expected_rows(topic, first + second, False))
    assert got == expected  # every record exactly once, none twice, none missing

    # The checkpoint holds the connector's offset JSON: {"topic":{"partition":next offset}}.
    offsets_dir = os.path.join(workdir, "checkpoint", "offsets")
    last = max(int(f) for f in os.listdir(offsets_dir) if f.isdigit())
    with open(os.path.join(offsets_dir, str(last))) as f:
        source_offsets = json.loads(f.read().splitlines()[-1])
    assert source_offsets == {topic: {"0": 25, "1": 25, "2": 25}}


def test_max_offsets_per_trigger(spark, broker, topic_factory, produce, workdir):
    topic = topic_factory("spark-limit", partitions=2)
    # 15 records in partition 0 and 5 in partition 1; limit 8 is shared by size and rounded down
    # (a share below one rounds up): 6+2, then 6+2, then the rest 3+1.
    produce(topic, [{"value": b"a%d" % i, "partition": 0} for i in range(15)]
            + [{"value": b"b%d" % i, "partition": 1} for i in range(5)])
    batches = _stream_to_parquet(spark, broker, topic, workdir, startingOffsets="earliest",
                                 maxOffsetsPerTrigger="8")
    assert batches == [8, 8, 4]
    assert spark.read.parquet(os.path.join(workdir, "out")).count() == 20


def _delete_records_before(broker, topic: str, offset: int) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.delete_records([TopicPartition(topic, 0, offset)], request_timeout=30).values():
        assert f.result().low_watermark == offset


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_fail_on_data_loss_after_delete_records(spark, broker, topic_factory, produce, workdir, fail_on_data_loss):
    """A stream read to 20 resumes after DeleteRecords moved the log start to 30: the records
    20..29 are gone. true fails the query naming the option; false reads 30..39 and goes on."""
    topic = topic_factory("spark-loss", partitions=1)
    produce(topic, [{"value": b"r%d" % i, "partition": 0} for i in range(20)])
    assert sum(_stream_to_parquet(spark, broker, topic, workdir, startingOffsets="earliest",
                                  failOnDataLoss=fail_on_data_loss)) == 20
    produce(topic, [{"value": b"r%d" % i, "partition": 0} for i in range(20, 40)])
    _delete_records_before(broker, topic, 30)
    if fail_on_data_loss == "true":
        with pytest.raises(Exception, match="(?s)DataLossError.*failOnDataLoss"):
            _stream_to_parquet(spark, broker, topic, workdir, failOnDataLoss="true")
        # A batch query over the deleted offsets fails the same way.
        with pytest.raises(Exception, match="failOnDataLoss"):
            _reader(spark, broker, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 0}})).collect()
        return
    assert sum(_stream_to_parquet(spark, broker, topic, workdir, failOnDataLoss="false")) == 10
    out = spark.read.parquet(os.path.join(workdir, "out"))
    assert sorted(r.offset for r in out.select("offset").collect()) == list(range(20)) + list(range(30, 40))
    batch = _reader(spark, broker, subscribe=topic, failOnDataLoss="false",
                    startingOffsets=json.dumps({topic: {"0": 0}}))
    assert sorted(r.offset for r in batch.select("offset").collect()) == list(range(30, 40))


def test_fail_on_data_loss_after_retention(spark, broker, workdir):
    """As after DeleteRecords, with the log start moved by time retention instead: a stream read
    to 20 resumes after retention.ms (set by IncrementalAlterConfigs) deleted the closed
    segments of records 0..29, written an hour ago; 30..39 are new. true fails naming the
    option; false then resumes from the same checkpoint and reads 30..39. A broker of its own,
    checking retention every 200 ms: the module's broker holds records of 2023 (BASE_TS)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    own = BrokerProcess(storage_mode=broker.storage_mode, extra_args=["--retention-check-ms", "200"])
    try:
        own.start()
        producer = Producer({"bootstrap.servers": own.bootstrap, "acks": "all", "linger.ms": 5})

        def produce(first: int, last: int, timestamp: int = 0) -> None:
            for i in range(first, last):
                producer.produce(topic, value=b"r%d" % i * 40, partition=0, timestamp=timestamp)
            assert producer.flush(30) == 0

        topic = create_topic(own.bootstrap, unique_topic("spark-retention"), 1,
                             configs={"segment.bytes": "1024", "retention.ms": "-1"})
        old = int(time.time() * 1000) - 3_600_000
        produce(0, 20, old)
        assert sum(_stream_to_parquet(spark, own, topic, workdir, startingOffsets="earliest")) == 20
        produce(20, 30, old)
        produce(30, 40)
        admin = AdminClient({"bootstrap.servers": own.bootstrap})
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry("retention.ms", "600000", incremental_operation=AlterConfigOpType.SET)])
        for f in admin.incremental_alter_configs([resource]).values():
            f.result(30)
        deadline = time.monotonic() + 30
        while admin_low_watermark(own, topic) < 30 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert admin_low_watermark(own, topic) == 30, "retention did not delete the old segments"
        with pytest.raises(Exception, match="(?s)DataLossError.*failOnDataLoss"):
            _stream_to_parquet(spark, own, topic, workdir, failOnDataLoss="true")
        assert sum(_stream_to_parquet(spark, own, topic, workdir, failOnDataLoss="false")) == 10
        out = spark.read.parquet(os.path.join(workdir, "out"))
        assert sorted(r.offset for r in out.select("offset").collect()) == list(range(20)) + list(range(30, 40))
    finally:
        own.cleanup()


def admin_low_watermark(broker, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "watermarks"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[0]
    finally:
        consumer.close()


def test_min_partitions_and_max_records_split_ranges(spark, broker, topic_factory, produce):
    topic = topic_factory("spark-split", partitions=2)
    records = _records(60, 2)  # 30 per partition
    produce(topic, records)
    expected = _expected_rows(topic, records, include_headers=False)
    split = _reader(spark, broker, subscribe=topic, minPartitions="6")
    assert split.rdd.getNumPartitions() == 6
    assert _collected(split, include_headers=False) == expected  # no record lost or read twice at a cut
    capped = _reader(spark, broker, subscribe=topic, maxRecordsPerPartition="7")
    assert capped.rdd.getNumPartitions() == 10  # ceil(30 / 7) = 5 per Kafka partition
    assert _collected(capped, include_headers=False) == expected
    with pytest.raises(Exception, match="bogusoption"):
        _reader(spark, broker, subscribe=topic, bogusOption="1").collect()
