"""`make spark-demo-cluster`: the demo's streaming job on three brokers, with brokers killed under it.

    .venv/bin/python -m spark.demo_cluster [--orders 3600] [--storage-mode segment] [--keep]

1. starts etcd and three `twinlog serve --etcd` brokers (production's 9 s session; a SIGKILLed
   broker's refused port gets it replaced in ~1.5 s), topics `orders` (4 partitions) and
   `order-stats` with replication factor 3 and min.insync.replicas=2;
2. runs the windowed-revenue job (spark/revenue_job.py) on a 1-second processing-time trigger to
   parquet and to `order-stats`, SIGKILLs the leader of orders-0 and later the broker leading
   order-stats-0, restarting each after a few seconds (spark/failover_run.py);
3. checks the windows written, contents not counts: parquet and order-stats each hold exactly the
   windows (orders, revenue, items) a run without failures writes.

The orders have no late events, so the failure-free result follows from the input alone: every
window ending by the final watermark, with every order in it. --keep leaves the parquet files and
the cluster's data directories (etcd and brokers) on disk.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

from spark import order_events
from spark.demo import print_busiest

PRODUCTION_SESSION_MS = 9000


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--orders", type=int, default=3600)
    args.add_argument("--storage-mode", default="segment", choices=["segment", "commitlog"])
    args.add_argument("--keep", action="store_true", help="leave the parquet output and the cluster's data")
    opts = args.parse_args(argv)

    from spark.cluster_brokers import ClusterBrokers
    from spark.failover_run import run_with_failures
    from spark.session import local_session

    t0 = time.monotonic()
    orders = order_events.generate(opts.orders, late_fraction=0.0)
    work = tempfile.mkdtemp(prefix="twinlog-demo-cluster-")
    with ClusterBrokers(opts.storage_mode, session_ms=PRODUCTION_SESSION_MS, keep=opts.keep) as brokers:
        brokers.create_topics({"orders": 4, "order-stats": 1})
        print(f"twinlog cluster: brokers {brokers.bootstrap} ({opts.storage_mode} storage), etcd "
              f"{brokers.etcd.endpoint}; topics orders (4 partitions) and order-stats, "
              "replication factor 3, min.insync.replicas 2")
        spark = local_session("twinlog-demo-cluster", quiet=True)
        try:
            report = run_with_failures(spark, brokers, work, orders, max_per_trigger=max(100, opts.orders // 12),
                                       log=lambda line: print(f"  {time.monotonic() - t0:5.1f}s  {line}"))
        finally:
            spark.stop()
        dirs = {node: p.workdir for node, p in brokers.brokers.items()}
        etcd_dir = brokers.etcd.workdir
    print()
    print(f"micro-batches (input rows, parquet query): {report.batches}; {sum(report.batches)} of "
          f"{len(orders)} orders; queries restarted from their checkpoint: {report.query_restarts}")
    print(f"windows expected (those a run without failures writes): {len(report.expected)}")
    print(f"parquet equals them (orders, revenue, items of every window): {report.parquet == report.expected}")
    print(f"order-stats equals them: {report.topic == report.expected}"
          + (f" ({report.topic_duplicates} rows written twice by a re-run micro-batch)" if report.topic_duplicates
             else ""))
    print()
    print_busiest(report.parquet)
    if opts.keep:
        print(f"\nkept: parquet in {work}/windows; etcd data in {etcd_dir}; broker data in "
              + ", ".join(f"{d}" for d in dirs.values()))
    else:
        shutil.rmtree(work, ignore_errors=True)
    print(f"done in {time.monotonic() - t0:.0f}s")
    ok = report.parquet == report.expected and report.topic == report.expected
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
