"""twinlog for Spark: a PySpark 4 Python Data Source with the options, row schema and sink of
Spark's Kafka connector (spark-sql-kafka-0-10), registered under the short name "twinlog".

    from spark import register
    fmt = register(spark)          # "kafka" where the JVM connector is on the classpath, else "twinlog"
    spark.readStream.format(fmt).option("kafka.bootstrap.servers", "127.0.0.1:9092") \
        .option("subscribe", "orders").load()

A pipeline written for format("kafka") runs by changing only the format name.

    options.py          the connector's options, parsed and checked
    client_config.py    kafka.* pass-through, translated for librdkafka
    offsets.py          offsets in the connector's JSON shape, ranges, the per-trigger rate limit
    metadata.py         the driver's admin client: partitions and ListOffsets
    partition_reader.py one offset range read on an executor (assign + seek, no commits)
    batch_reader.py / stream_reader.py / sink.py / source.py   the Data Source API classes
    session.py          a local SparkSession for tests and the demo
    revenue_job.py      the demo's windowed query; demo.py / demo_cluster.py run it on one broker /
                        three (failover_run.py kills brokers under it, cluster_brokers.py starts them)
"""

from __future__ import annotations

from spark.source import TwinlogDataSource

JVM_CONNECTOR_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"


def jvm_connector_available(spark) -> bool:
    try:
        spark.sparkContext._jvm.java.lang.Class.forName(JVM_CONNECTOR_CLASS)
        return True
    except Exception:  # py4j wraps ClassNotFoundException
        return False


def register(spark, prefer_jvm_connector: bool = True) -> str:
    """Register the "twinlog" source on `spark`; return the format name a pipeline should use."""
    spark.dataSource.register(TwinlogDataSource)
    if prefer_jvm_connector and jvm_connector_available(spark):
        return "kafka"
    return TwinlogDataSource.name()


__all__ = ["TwinlogDataSource", "register", "jvm_connector_available"]
