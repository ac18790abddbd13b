"""The sink: `df.write.format("twinlog")` / `writeStream`, writing rows like the connector's KafkaWriter.

Input columns (schema.SINK_COLUMN_TYPES): value (required, string or binary), key (optional,
string or binary), topic (string; the `topic` option, when given, overrides it), partition (int;
null lets the producer's partitioner choose from the key) and headers
(array<struct<key:string,value:binary>>). Strings are written as their UTF-8 bytes.

Each Spark task opens one producer with the connector's settings, idempotence on and acks=all
(client_config.py), writes its rows, and flushes before it reports success, so a task that
succeeds has every row acknowledged by the broker. Like the connector, the sink is at-least-once:
a retried task or micro-batch writes its rows again (idempotence removes only the duplicates a
producer's own retries would make).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

from confluent_kafka import KafkaException, Producer

from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from spark.client_config import producer_config
from spark.options import bootstrap_servers, kafka_params
from spark.schema import check_sink_schema

FLUSH_TIMEOUT_S = 120.0


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    records: int


def _bytes(value) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)  # bytearray / memoryview from Spark's binary type


class _RowProducer:
    """Writes rows of one task; collects the first delivery error and raises it at flush."""

    def __init__(self, bootstrap: str, params: Mapping[str, str], topic_option: str | None, schema: StructType):
        self._producer = Producer(producer_config(bootstrap, params))
        self._topic_option = topic_option
        self._index = {f.name.lower(): i for i, f in enumerate(schema.fields)}
        self._error = None

    def _delivered(self, err, _msg) -> None:
        if err is not None and self._error is None:
            self._error = err

    def _column(self, row: Row, name: str):
        i = self._index.get(name)
        return None if i is None else row[i]

    def produce(self, row: Row) -> None:
        topic = self._topic_option or self._column(row, "topic")
        if topic is None:
            raise ValueError("null topic present in the data. Use the topic option for setting a topic.")
        kwargs = {"value": _bytes(self._column(row, "value")), "key": _bytes(self._column(row, "key")),
                  "on_delivery": self._delivered}
        headers = self._column(row, "headers")
        if headers:
            kwargs["headers"] = [(h[0], _bytes(h[1])) for h in headers]
        partition = self._column(row, "partition")
        if partition is not None:
            kwargs["partition"] = int(partition)
        while True:
            try:
                self._producer.produce(topic, **kwargs)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                self._producer.poll(0.1)
        self._producer.poll(0)
        if self._error is not None:
            raise KafkaException(self._error)

    def flush(self) -> None:
        left = self._producer.flush(FLUSH_TIMEOUT_S)
        if self._error is not None:
            raise KafkaException(self._error)
        if left:
            raise TimeoutError(f"{left} records were not acknowledged within {FLUSH_TIMEOUT_S}s")


class _SinkBase:
    def __init__(self, schema: StructType, options: Mapping[str, str]):
        self.bootstrap = bootstrap_servers(options)
        self.topic = options.get("topic")
        self.params = kafka_params(options)
        self.schema = schema
        check_sink_schema(schema, self.topic)

    def write(self, iterator: Iterator[Row]) -> SinkCommitMessage:
        producer = _RowProducer(self.bootstrap, self.params, self.topic, self.schema)
        n = 0
        for row in iterator:
            producer.produce(row)
            n += 1
        producer.flush()
        return SinkCommitMessage(records=n)


class KafkaSinkWriter(_SinkBase, DataSourceWriter):
    def commit(self, messages) -> None:
        pass  # every task flushed and saw every acknowledgement before reporting success

    def abort(self, messages) -> None:
        pass  # rows already acknowledged stay: Kafka has no way to take them back (as in the connector)


class KafkaSinkStreamWriter(_SinkBase, DataSourceStreamWriter):
    def commit(self, messages, batchId: int) -> None:
        pass

    def abort(self, messages, batchId: int) -> None:
        pass
