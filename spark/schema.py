"""The connector's row schema, and a Kafka record turned into one such row.

spark-sql-kafka-0-10 (KafkaRecordToRowConverter) gives every record as

    key binary, value binary, topic string, partition int, offset long,
    timestamp timestamp, timestampType int [, headers array<struct<key:string,value:binary>>]

with headers only when includeHeaders=true, and null (not an empty array) for a record
without headers. timestampType is Kafka's TimestampType id: 0 CreateTime, 1 LogAppendTime,
-1 when the record has none. The sink accepts the columns listed in SINK_COLUMN_TYPES.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME

from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField,
                               StructType, TimestampType)

HEADERS_TYPE = ArrayType(StructType([
    StructField("key", StringType()),
    StructField("value", BinaryType()),
]))

BASE_FIELDS = [
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
]


def source_schema(include_headers: bool) -> StructType:
    fields = list(BASE_FIELDS)
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


# librdkafka's timestamp type constants -> Kafka's TimestampType ids, which the connector emits.
_TIMESTAMP_TYPE_ID = {TIMESTAMP_CREATE_TIME: 0, TIMESTAMP_LOG_APPEND_TIME: 1}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def timestamp_of(millis: int) -> datetime:
    # timedelta keeps every millisecond exact (a float division would not for large values).
    return _EPOCH + timedelta(milliseconds=millis)


def row_of(message, include_headers: bool) -> tuple:
    """One confluent_kafka.Message -> one row tuple in the connector's column order."""
    ts_type, ts = message.timestamp()
    row = (
        message.key(),
        message.value(),
        message.topic(),
        message.partition(),
        message.offset(),
        timestamp_of(ts) if ts_type in _TIMESTAMP_TYPE_ID else None,
        _TIMESTAMP_TYPE_ID.get(ts_type, -1),
    )
    if include_headers:
        headers = message.headers()
        row += ([(k, v) for k, v in headers] if headers else None,)
    return row


# Sink input columns the connector accepts and the Spark types each may have (KafkaWriter).
SINK_COLUMN_TYPES = {
    "topic": (StringType,),
    "key": (StringType, BinaryType),
    "value": (StringType, BinaryType),
    "headers": (ArrayType,),
    "partition": (IntegerType,),
}


def check_sink_schema(schema: StructType, topic_option: str | None) -> None:
    """KafkaWriter.validateQuery: value required, topic from the option or a column, types checked."""
    fields = {f.name.lower(): f for f in schema.fields}
    if "value" not in fields:
        raise ValueError("Required attribute 'value' not found: the sink writes a 'value' column")
    if topic_option is None and "topic" not in fields:
        raise ValueError("topic option required when no 'topic' attribute is present. "
                         "Use the topic option for setting a topic.")
    for name, allowed in SINK_COLUMN_TYPES.items():
        field = fields.get(name)
        if field is None:
            continue
        if not isinstance(field.dataType, allowed):
            names = " or ".join(t.__name__.replace("Type", "").lower() for t in allowed)
            raise ValueError(f"{name} attribute type must be a {names}, got {field.dataType.simpleString()}")
    headers = fields.get("headers")
    if headers is not None and headers.dataType != HEADERS_TYPE:
        raise ValueError("headers attribute type must be array<struct<key:string,value:binary>>, "
                         f"got {headers.dataType.simpleString()}")
