"""The pipeline users run: orders into twinlog, windowed revenue per region out of Spark.

    make spark-demo        (or: .venv/bin/python -m spark.demo --orders 3000 [--keep])
    make spark-demo-cluster   the same job on three brokers, with brokers killed under it
                              (spark/demo_cluster.py)

1. starts a twinlog broker (`twinlog serve`, temporary data dir, free port: broker/testing/twinlog_broker.py);
2. a generator produces JSON order events into the topic `orders` (order_events.py);
3. a Structured Streaming job reads `orders` with the twinlog source, parses the JSON, and counts
   orders and revenue per region over 1-minute event-time windows with a 2-minute watermark
   (append mode: a window is written once, when the watermark has passed its end);
4. the results go to parquet and, through the twinlog sink, to the topic `order-stats`;
5. the job runs twice with Trigger.AvailableNow, orders arriving in between: the second run
   resumes from the checkpoint, so no order is counted twice;
6. prints a summary: micro-batches, windows written, what the watermark dropped, and a check that
   parquet and the `order-stats` topic hold the same windows (orders, revenue and items of each).

--keep leaves the parquet files and the broker's data (topics orders and order-stats) on disk and
prints how to serve and read them again.

The job is the one a Kafka user would write: replace "twinlog" by "kafka" and it is unchanged.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from datetime import datetime, timedelta, timezone

from broker.testing.twinlog_broker import TwinlogBroker
from spark import order_events
from spark.failover_run import read_parquet_windows, read_topic_windows
from spark.revenue_job import windowed_revenue

def run_job(spark, bootstrap: str, workdir: str, fmt: str = "twinlog") -> list[int]:
    """One AvailableNow run of both queries; returns the input rows of each micro-batch."""
    stats = windowed_revenue(spark, bootstrap, fmt)
    to_parquet = (stats.writeStream.format("parquet").outputMode("append")
                  .option("path", os.path.join(workdir, "windows"))
                  .option("checkpointLocation", os.path.join(workdir, "cp-parquet"))
                  .trigger(availableNow=True).start())
    to_topic = (stats.selectExpr("region AS key", "to_json(struct(*)) AS value")
                .writeStream.format(fmt).outputMode("append")
                .option("kafka.bootstrap.servers", bootstrap).option("topic", "order-stats")
                .option("checkpointLocation", os.path.join(workdir, "cp-topic"))
                .trigger(availableNow=True).start())
    batches = []
    for q in (to_parquet, to_topic):
        q.awaitTermination()
        if q.exception():
            raise RuntimeError(q.exception())
        if q is to_parquet:
            batches = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    return batches


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--orders", type=int, default=3000)
    args.add_argument("--storage-mode", default="segment", choices=["segment", "commitlog"])
    args.add_argument("--keep", action="store_true", help="leave the parquet output and the broker's data")
    opts = args.parse_args(argv)

    from spark.session import local_session

    t0 = time.monotonic()
    orders = order_events.generate(opts.orders)
    first, second = orders[: len(orders) * 2 // 3], orders[len(orders) * 2 // 3:]
    work = tempfile.mkdtemp(prefix="twinlog-demo-spark-")
    with TwinlogBroker(opts.storage_mode, keep=opts.keep) as broker:
        bootstrap = broker.bootstrap_servers
        print(f"twinlog broker on {bootstrap} ({opts.storage_mode} storage)")
        broker.create_topic("orders", partitions=4)
        broker.create_topic("order-stats", partitions=2)
        spark = local_session("twinlog-demo", quiet=True)
        try:
            order_events.produce(bootstrap, "orders", first)
            print(f"produced {len(first)} orders; streaming job, run 1 ...")
            run1 = run_job(spark, bootstrap, work)
            order_events.produce(bootstrap, "orders", second)
            print(f"produced {len(second)} more; run 2 resumes from the checkpoint ...")
            run2 = run_job(spark, bootstrap, work)
            summarize(spark, bootstrap, work, orders, run1, run2)
        finally:
            spark.stop()
    if opts.keep:
        print(f"\nkept: parquet in {work}/windows; the broker's data in {broker.data_dir}; read them "
              f"again with\n  twinlog serve --data-dir {broker.data_dir} --port {broker.port} &\n"
              f"  kcat -C -b {bootstrap} -t order-stats -e")
    else:
        shutil.rmtree(work, ignore_errors=True)
    print(f"done in {time.monotonic() - t0:.0f}s")
    return 0


def summarize(spark, bootstrap: str, work: str, orders, run1: list[int], run2: list[int]) -> None:
    parquet = read_parquet_windows(spark, work)
    from_topic, duplicates = read_topic_windows(spark, bootstrap)
    truth = order_events.true_windows(orders)
    exact = sum(1 for (start, region), (count, cents, _) in parquet.items()
                if truth.get((datetime.fromtimestamp(start, timezone.utc), region)) == (count, cents / 100))
    counted = sum(c for c, _, _ in parquet.values())
    watermark = max(o.event_time for o in orders) - timedelta(minutes=2)
    still_open = sum(1 for start, _ in truth if start + timedelta(minutes=1) > watermark)
    late = sum(o.late for o in orders)
    print()
    print(f"micro-batches (input rows): run 1 {run1}, run 2 {run2}; total {sum(run1) + sum(run2)} "
          f"of {len(orders)} orders, each read once")
    print(f"windows written: {len(parquet)} (parquet), {len(from_topic)} (topic order-stats); "
          f"{still_open} still open (they end after the final watermark {watermark:%H:%M:%S})")
    print(f"orders in written windows: {counted}; {exact} windows equal an exact count over every event; "
          f"{late} orders arrived 5 minutes late and were dropped once their window had closed")
    print("same windows in parquet and in order-stats (orders, revenue, items of each):", parquet == from_topic,
          f"({duplicates} rows repeated in order-stats)" if duplicates else "")
    print()
    print_busiest(parquet)


def print_busiest(windows: dict, n: int = 5) -> None:
    print("busiest windows:")
    print(f"  {'window start':<20} {'region':<9} {'orders':>6} {'revenue':>9}")
    for (start, region), (count, cents, _) in sorted(windows.items(), key=lambda kv: -kv[1][1])[:n]:
        print(f"  {datetime.fromtimestamp(start, timezone.utc):%Y-%m-%d %H:%M}     {region:<9} {count:>6} "
              f"{cents / 100:>9.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
