"""What `--metrics-port` costs the produce path: compare.py's peak produce cell (one partition,
100 B records, page cache, confluent-kafka) with metrics off and on, alternated run by run so a
machine shared with other work loads both alike. With metrics on, /metrics is scraped every
SCRAPE_EVERY_S during the run (its collection runs on the broker's event loop), as Prometheus would.

    .venv/bin/python bench/metrics_overhead.py [--rounds 4] [--modes segment,commitlog] [--linger-ms 5,0]

Prints each run and, per (mode, linger), the medians off and on of the rate and of the broker's
CPU time per record (the steadier figure on a shared machine: the rate is also bound by the load
generator and by whatever else runs).
linger.ms 0 makes librdkafka send many small requests, so the per-request cost (where the
metrics' counting sits) weighs most there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from broker_launcher import BrokerProcess, broker_command, free_port  # noqa: E402
from compare_cells import Cell, Machine, make_topic, throughput  # noqa: E402

SCRAPE_EVERY_S = 2.0  # Prometheus defaults to 15 s: this is harsher
SECONDS = 4.0


def run_once(mode: str, linger_ms: int, metrics: bool, m: Machine) -> tuple[float, float]:
    """(records/s, broker CPU microseconds per record)."""
    work = Path(tempfile.mkdtemp(prefix="metrics-", dir=m.work))
    (work / "data").mkdir()
    port, metrics_port = free_port(), free_port()
    extra = ["--storage-mode", mode] + (["--metrics-port", str(metrics_port)] if metrics else [])
    broker = BrokerProcess(broker_command("twinlog", None, extra, work / "data", "127.0.0.1", port),
                           "127.0.0.1", port, work / "broker.log", m.broker_cpus)
    broker.start()
    broker.data_dir = work / "data"
    stop = threading.Event()
    scrapes = []

    def scrape() -> None:
        while not stop.wait(SCRAPE_EVERY_S):
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
                scrapes.append(len(r.read()))

    scraper = threading.Thread(target=scrape, daemon=True)
    try:
        cell = Cell("twinlog", mode, 1, 100, "page_cache")
        topic = make_topic(broker, cell, "metrics")
        if metrics:
            scraper.start()
        result = throughput(broker, cell, topic, m, SECONDS, linger_ms, 1 << 30)
    finally:
        stop.set()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    if metrics:
        assert scrapes, "no scrape answered during the run"
    return result["msgs_s"], result["broker_cpu"] / result["msgs_s"] * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--modes", default="segment,commitlog")
    ap.add_argument("--linger-ms", default="5,0")
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    split = ({cpus[0]}, set(cpus[1:])) if len(cpus) >= 2 else (None, None)
    (BENCH / "results" / "tmp").mkdir(parents=True, exist_ok=True)
    m = Machine(split[0], split[1], Path(tempfile.mkdtemp(prefix="metrics-", dir=BENCH / "results" / "tmp")))
    runs: dict[tuple, list[tuple[float, float]]] = {}
    try:
        for r in range(args.rounds):
            for mode in args.modes.split(","):
                for linger in map(int, args.linger_ms.split(",")):
                    for metrics in ((False, True) if r % 2 == 0 else (True, False)):
                        rate, cpu_us = run_once(mode, linger, metrics, m)
                        runs.setdefault((mode, linger, metrics), []).append((rate, cpu_us))
                        print(f"round {r + 1} {mode} linger {linger} metrics {'on ' if metrics else 'off'}: "
                              f"{rate:,.0f} msg/s, broker {cpu_us:.3f} us/record", flush=True)
    finally:
        shutil.rmtree(m.work, ignore_errors=True)
    for mode in args.modes.split(","):
        for linger in map(int, args.linger_ms.split(",")):
            off, on = runs[(mode, linger, False)], runs[(mode, linger, True)]
            rate_off, rate_on = (statistics.median(x[0] for x in v) for v in (off, on))
            cpu_off, cpu_on = (statistics.median(x[1] for x in v) for v in (off, on))
            print(f"{mode} linger {linger}: off {rate_off:,.0f} msg/s {cpu_off:.3f} us/record; "
                  f"on {rate_on:,.0f} msg/s {cpu_on:.3f} us/record (rate {rate_on / rate_off - 1:+.1%}, "
                  f"CPU {cpu_on / cpu_off - 1:+.1%})")

if __name__ == "__main__":
    main()
