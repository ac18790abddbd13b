"""The twinlog sink: what a DataFrame writes, read back through the source, equals its input.

Checks the connector's input columns (topic column or option, key/value as string or binary,
headers, partition) for a batch write and for a streaming query copying one topic to another.
"""

from __future__ import annotations

import os

import pytest
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, StringType, StructField, StructType)

from spark.schema import HEADERS_TYPE


def _read_back(spark, broker, topic: str) -> list[tuple]:
    df = (spark.read.format("twinlog").option("kafka.bootstrap.servers", broker.bootstrap)
          .option("subscribe", topic).option("includeHeaders", "true").load())
    rows = []
    for r in df.select("key", "value", "partition", "headers").collect():
        headers = None if r.headers is None else [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers]
        rows.append((None if r.key is None else bytes(r.key), bytes(r.value), r.partition, headers))
    return sorted(rows, key=lambda t: t[1])


def test_batch_sink_round_trip(spark, broker, topic_factory):
    left, right = topic_factory("spark-sink-a", partitions=2), topic_factory("spark-sink-b", partitions=3)
    schema = StructType([
        StructField("topic", StringType()),
        StructField("key", StringType()),
        StructField("value", BinaryType()),
        StructField("partition", IntegerType()),
        StructField("headers", HEADERS_TYPE),
    ])
    data = []
    for i in range(50):
        headers = [("n", str(i).encode()), ("empty", None)] if i % 2 else None
        data.append((left if i % 3 else right, None if i % 5 == 0 else f"k{i}", f"v{i:03d}".encode(),
                     i % 2 if i % 3 else None, headers))
    df = spark.createDataFrame(data, schema)
    # The connector's sink takes Append (or its default ErrorIfExists, which Python data sources
    # cannot offer: see spark/README.md).
    df.write.format("twinlog").mode("append").option("kafka.bootstrap.servers", broker.bootstrap).save()

    for topic in (left, right):
        expected = sorted((((None if k is None else k.encode()), v, p, h)
                           for t, k, v, p, h in data if t == topic), key=lambda t: t[1])
        got = _read_back(spark, broker, topic)
        assert [(k, v, h) for k, v, _, h in got] == [(k, v, h) for k, v, _, h in expected]
        for (_, v, p_got, _), (_, _, p_want, _) in zip(got, expected):
            if p_want is not None:
                assert p_got == p_want, v


def test_topic_option_overrides_column_and_string_value(spark, broker, topic_factory):
    target = topic_factory("spark-sink-opt")
    df = spark.createDataFrame([("elsewhere", "a", "x"), ("elsewhere", None, "y")], "topic string, key string, value string")
    df.write.format("twinlog").mode("append").option("kafka.bootstrap.servers", broker.bootstrap) \
        .option("topic", target).save()
    got = _read_back(spark, broker, target)
    assert [(k, v) for k, v, _, _ in got] == [(b"a", b"x"), (None, b"y")]


def test_sink_refuses_what_the_connector_refuses(spark, broker):
    df = spark.createDataFrame([(1,)], "value int")
    with pytest.raises(Exception, match="value attribute type must be a string or binary"):
        df.write.format("twinlog").mode("append").option("kafka.bootstrap.servers", broker.bootstrap) \
            .option("topic", "x").save()
    no_topic = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match="topic option required"):
        no_topic.write.format("twinlog").mode("append").option("kafka.bootstrap.servers", broker.bootstrap).save()


def test_stream_sink_copies_a_topic(spark, broker, topic_factory, produce, workdir):
    source, sink = topic_factory("spark-copy-in", partitions=2), topic_factory("spark-copy-out", partitions=2)
    produce(source, [{"key": b"k%d" % (i % 7), "value": b"record-%03d" % i, "partition": i % 2,
                      "headers": [("i", b"%d" % i)]} for i in range(40)])
    query = (spark.readStream.format("twinlog").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("subscribe", source).option("startingOffsets", "earliest").option("includeHeaders", "true")
             .load()
             .selectExpr("key", "value", "headers", "partition")
             .writeStream.format("twinlog").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("topic", sink).option("checkpointLocation", os.path.join(workdir, "checkpoint"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(180)
    assert query.exception() is None
    assert _read_back(spark, broker, sink) == _read_back(spark, broker, source)
