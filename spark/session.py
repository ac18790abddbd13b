"""A local SparkSession for the tests and the demo, with the twinlog source registered.

Python workers must run the same interpreter as the driver (the venv that has confluent-kafka
and this package), so PYSPARK_PYTHON is pinned to sys.executable before the JVM starts. The
settings keep a 2-core machine responsive: no UI, few shuffle partitions, reused workers.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from spark import register


QUIET_LOG4J = os.path.join(os.path.dirname(__file__), "log4j2-demo.properties")


def local_session(app_name: str = "twinlog", master: str = "local[2]", quiet: bool = False,
                  **conf: str) -> SparkSession:
    """quiet: Spark logs errors only, from the JVM's start on (the demos)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.python.worker.reuse", "true")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.streaming.stopTimeout", "30s"))
    if quiet:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no "hostname resolves to a loopback address"
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J}")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR" if quiet else "WARN")
    register(spark)
    return spark
