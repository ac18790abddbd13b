"""A local SparkSession for the tests and the demo, with the twinlog source registered.

Python workers must run the same interpreter as the driver (the venv that has confluent-kafka
and this package), so PYSPARK_PYTHON is pinned to sys.executable before the JVM starts. The
settings keep a 2-core machine responsive: no UI, few shuffle partitions, reused workers, and a
driver JVM that spends less CPU warming up (DRIVER_JVM_FLAGS).
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from spark import register


QUIET_LOG4J = os.path.join(os.path.dirname(__file__), "log4j2-demo.properties")
# The client JIT only (C1) and the serial collector: a local session runs small jobs, so the JVM's
# CPU goes mostly to compiling and collecting while it warms up, not to running hot code. On the
# 2-core test machine they took a session's start from 16 to 8.5 s of CPU, its first query from
# 6.7 to 3.4 s and five small ones after it from 3.8 to 1.4 s.
DRIVER_JVM_FLAGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


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
    java_options = DRIVER_JVM_FLAGS
    if quiet:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no "hostname resolves to a loopback address"
        java_options += f" -Dlog4j2.configurationFile=file:{QUIET_LOG4J}"
    builder = builder.config("spark.driver.extraJavaOptions", java_options)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR" if quiet else "WARN")
    register(spark)
    return spark
