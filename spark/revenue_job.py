"""The demo's streaming query: order events in, revenue per region and 1-minute window out.

Orders are JSON (order_events.py) read with the twinlog source (or format "kafka": the query is
the connector's, unchanged); a 2-minute watermark closes windows, so in append mode each window
is written once, when the watermark passes its end. Used by demo.py and failover_run.py.
"""

from __future__ import annotations

ORDER_SCHEMA = ("order_id string, customer string, region string, amount double, currency string, "
                "items int, event_time timestamp")


def windowed_revenue(spark, bootstrap: str, fmt: str = "twinlog", max_offsets: int = 1000, retries: int = 3):
    from pyspark.sql import functions as F

    orders = (spark.readStream.format(fmt)
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", "orders")
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(max_offsets))
              .option("fetchOffset.numRetries", str(retries))
              .load()
              .select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o"))
              .select("o.*"))
    return (orders.withWatermark("event_time", "2 minutes")
            .groupBy(F.window("event_time", "1 minute"), "region")
            .agg(F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("revenue"),
                 F.sum("items").alias("items"))
            .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                    "region", "orders", "revenue", "items"))
