"""The data source Spark sees: short name "twinlog", the connector's options and schema.

    spark.dataSource.register(TwinlogDataSource)
    spark.read.format("twinlog").option("kafka.bootstrap.servers", ...).option("subscribe", ...)

Options are parsed and checked on the driver when a reader or writer is made (options.py), so a
wrong option fails the query before any task runs, with the connector's wording.
"""

from __future__ import annotations

from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    DataSourceStreamWriter, DataSourceWriter)
from pyspark.sql.types import StructType

from spark.batch_reader import KafkaBatchReader
from spark.options import bootstrap_servers, parse_source_options
from spark.schema import source_schema
from spark.sink import KafkaSinkStreamWriter, KafkaSinkWriter
from spark.stream_reader import KafkaStreamReader


class TwinlogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "twinlog"

    def schema(self) -> StructType:
        include = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        return source_schema(include)

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(parse_source_options(self.options, streaming=False), bootstrap_servers(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(parse_source_options(self.options, streaming=True), bootstrap_servers(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise ValueError("Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
                             "ErrorIfExists (default).")
        return KafkaSinkWriter(schema, self.options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return KafkaSinkStreamWriter(schema, self.options)
