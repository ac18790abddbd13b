"""The mode-comparison benchmark: Kafka-style segments against the RocketMQ-style commitlog on
the same broker and disk, against the machine's limits and against a peer broker.

    .venv/bin/python bench/compare.py --quick     # under 3 minutes, a representative subset
    .venv/bin/python bench/compare.py --full      # the whole matrix (about half an hour)
        [--no-tansu] [--results-dir DIR]

One run measures, in this order:
  1. the limits: disk sequential write (dd, fdatasync), loopback sendfile, and the load
     generator's own ceiling against librdkafka's in-process mock broker;
  2. for each storage mode and each (partitions, record size, durability) cell of the profile,
     on a fresh broker: peak produce throughput (one confluent-kafka process, queue full), then
     send-to-ack latency with the producer held at LATENCY_FRACTION of that peak, and the same
     paced load against librdkafka's mock cluster on the broker's CPU (a reference broker);
     after a fsync-before-ack cell, the disk's own fsync latency at that cell's bytes/s;
  3. per mode: consume throughput from a hot page cache and cold (files evicted first);
     end-to-end latency (produce -> consumer sees it) at E2E_FRACTION of the 100 B peak;
  4. Tansu 0.6.0 (in memory) on the same cells where it applies, as a peer.
The broker is pinned to CPU 0 and the load generators to the other CPU(s). Results go to
bench/results/compare-<profile>.{json,csv,md} and .png plots (compare_report.py).
This is a script, not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
import traceback
from itertools import product
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare_cells as cells  # noqa: E402
import compare_report  # noqa: E402
from compare_cells import Cell, Machine  # noqa: E402
from machine_ceilings import fsync_latency, loopback_sendfile_rate  # noqa: E402
from machine_facts import disk_write_rate, filesystem_of, machine_facts  # noqa: E402

BENCH = Path(__file__).resolve().parent
MODES = ["segment", "commitlog"]
LATENCY_FRACTION = 0.5  # the "half of peak"
E2E_FRACTION = 0.25  # producer and consumer share the client CPU: at 0.5 they would be its limit

QUICK_CELLS = [(1, 100, "page_cache"), (1, 1024, "fsync_100ms"), (1000, 1024, "fsync_100ms"),
               (1, 1024, "fsync_ack"), (1, 16384, "page_cache")]
FULL_CELLS = list(product([1, 16, 64, 256, 1000], [100, 1024, 16384], ["page_cache", "fsync_100ms", "fsync_ack"]))
PROFILES = {
    "quick": dict(cells=QUICK_CELLS, throughput_s=3.0, latency_s=2.0, max_bytes=1 << 30,
                  consume_size=16384, consume_fill=512 << 20, hot_passes=1, e2e_size=100, e2e_s=2.0,
                  mock_sizes=[100, 16384], mock_s=3.0, dd_mib=1024, dd_runs=1, loop_mib=2048,
                  python_client_sizes=[100], tansu_cells=[(1, 100, "memory"), (1, 16384, "memory")]),
    "full": dict(cells=FULL_CELLS, throughput_s=6.0, latency_s=5.0, max_bytes=3 << 30,
                 consume_size=16384, consume_fill=2 << 30, hot_passes=2, e2e_size=100, e2e_s=5.0,
                 mock_sizes=[100, 1024, 16384], mock_s=5.0, dd_mib=2048, dd_runs=3, loop_mib=4096,
                 python_client_sizes=[100, 1024], tansu_cells=list(product([1, 16, 64], [100, 1024, 16384], ["memory"]))),
}


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_const", dest="profile", const="quick")
    g.add_argument("--full", action="store_const", dest="profile", const="full")
    ap.set_defaults(profile="quick")
    ap.add_argument("--no-tansu", action="store_true", help="skip the peer broker")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--linger-ms", type=int, default=5, help="librdkafka linger.ms of the peak phases")
    ap.add_argument("--latency-linger-ms", type=int, default=1,
                    help="linger.ms of the latency phases (0 sends one tiny request per record "
                         "burst: the broker's per-request cost then saturates it at a fraction of peak)")
    ap.add_argument("--results-dir", type=Path, default=BENCH / "results")
    return ap.parse_args(argv)


class Comparison:
    def __init__(self, args: argparse.Namespace):
        self.args, self.prof = args, PROFILES[args.profile]
        cpus = sorted(os.sched_getaffinity(0))
        split = ({cpus[0]}, set(cpus[1:])) if len(cpus) >= 2 else (None, None)
        (BENCH / "results" / "tmp").mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix="compare-", dir=BENCH / "results" / "tmp"))
        self.m = Machine(split[0], split[1], self.work)
        self.r: dict = {"profile": args.profile, "started_at": datetime.datetime.now().isoformat(timespec="seconds"),
                        "machine": machine_facts(), "filesystem": filesystem_of(self.work),
                        "pinning": (f"broker on CPU {cpus[0]}, load generators on CPU "
                                    f"{','.join(map(str, cpus[1:]))}" if split[0] else "none (1 CPU)"),
                        "settings": {"linger_ms": args.linger_ms, "latency_linger_ms": args.latency_linger_ms,
                                     "latency_fraction": LATENCY_FRACTION, "e2e_fraction": E2E_FRACTION,
                                     **{k: v for k, v in self.prof.items() if not k.endswith("cells")}},
                        "limits": {}, "produce": [], "consume": [], "e2e": [], "errors": []}
        self.latencies: dict[str, list[float]] = {}  # cell name -> samples, for the CDF plot

    def steps(self) -> list[tuple[str, object]]:
        modes = self.args.modes.split(",")
        out = [("disk", self.disk), ("loopback", self.loopback)]
        out += [(f"mock ceiling {s} B", lambda s=s: self.mock(s)) for s in self.prof["mock_sizes"]]
        out += [(c.name, lambda c=c: self.produce_cell(c))
                for c in (Cell("twinlog", mode, p, size, d) for mode in modes for p, size, d in self.prof["cells"])]
        out += [(c.name, lambda c=c: self.produce_cell(c))
                for c in (Cell("twinlog", mode, 1, size, "page_cache", client) for mode in modes
                          for size in self.prof["python_client_sizes"] for client in ("kafka-python", "aiokafka"))]
        out += [(f"consume {mode}", lambda mode=mode: self.consume(Cell("twinlog", mode, 1, self.prof["consume_size"],
                                                                        "page_cache"))) for mode in modes]
        out += [(f"e2e {mode}", lambda mode=mode: self.e2e(Cell("twinlog", mode, 1, self.prof["e2e_size"],
                                                                "page_cache"))) for mode in modes]
        if not self.args.no_tansu:
            out += [(c.name, lambda c=c: self.produce_cell(c))
                    for c in (Cell("tansu", "memory", p, s, d) for p, s, d in self.prof["tansu_cells"])]
            out += [("consume tansu", lambda: self.consume(Cell("tansu", "memory", 1, self.prof["consume_size"], "memory")))]
        return out

    def run(self) -> int:
        from tqdm import tqdm

        if self.m.client_cpus:
            os.sched_setaffinity(0, self.m.client_cpus)
        t0 = time.monotonic()
        steps = self.steps()
        bar = tqdm(steps, unit="step", dynamic_ncols=True, file=sys.stderr)
        for name, fn in bar:
            bar.set_description(name[:40])
            try:
                line = fn()
                if line:
                    tqdm.write(f"{name}: {line}")
            except Exception as e:  # noqa: BLE001 - one failed step is reported; the run goes on
                msg = f"{name}: {type(e).__name__}: {str(e)[:300]}"
                self.r["errors"].append(msg)
                tqdm.write(f"FAILED {msg}")
                if os.environ.get("TWINLOG_BENCH_DEBUG"):
                    traceback.print_exc()
        shutil.rmtree(self.work, ignore_errors=True)
        self.r["elapsed_s"] = time.monotonic() - t0
        paths = compare_report.write(self.r, self.latencies, self.args.results_dir, f"compare-{self.args.profile}")
        print("\n" + compare_report.targets_markdown(self.r))
        print(f"wrote {', '.join(str(p) for p in paths)} ({self.r['elapsed_s']:.0f} s)")
        return 1 if self.r["errors"] else 0

    # -------------------------------------------------------------- the steps
    def disk(self) -> str:
        samples = [disk_write_rate(self.work, self.prof["dd_mib"], timeout=180) for _ in range(self.prof["dd_runs"])]
        self.r["limits"]["disk"] = {"mb_s": statistics.median(s["mb_s"] for s in samples), "samples": samples,
                                    "command": samples[0]["command"]}
        return f"{self.r['limits']['disk']['mb_s']:,.0f} MB/s"

    def loopback(self) -> str:
        lo = loopback_sendfile_rate(str(self.work), 256, self.prof["loop_mib"], self.m.broker_cpus,
                                    self.m.client_cpus, timeout=60)
        self.r["limits"]["loopback"] = lo
        return f"{lo['mb_s']:,.0f} MB/s"

    def mock(self, size: int) -> str:
        res = cells.mock_ceiling(size, self.m, self.prof["mock_s"], self.args.linger_ms)
        self.r["limits"].setdefault("mock", {})[str(size)] = res
        return f"{res['msgs_s']:,.0f} msg/s, {res['mb_s']:,.0f} MB/s"

    def produce_cell(self, cell: Cell) -> str:
        row = {"broker": cell.broker, "mode": cell.mode, "partitions": cell.partitions,
               "record_size": cell.record_size, "durability": cell.durability, "client": cell.client}
        self.r["produce"].append(row)
        try:
            with cells.broker_for(cell, self.m) as broker:
                topic = cells.make_topic(broker, cell, "produce")
                row["throughput"] = cells.throughput(broker, cell, topic, self.m, self.prof["throughput_s"],
                                                     self.args.linger_ms, self.prof["max_bytes"])
                if cell.client != "confluent-kafka":
                    t = row["throughput"]
                    return f"{t['msgs_s']:,.0f} msg/s, client CPU {t['client_cpu']:.0%}"
                peak = row["throughput"]["msgs_s"]
                lat = cells.latency(broker, cell, topic, self.m, LATENCY_FRACTION * peak,
                                    self.prof["latency_s"], self.args.latency_linger_ms)
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
            raise
        self.latencies[cell.name] = lat.pop("_latencies_s")
        row["latency"] = lat
        row["latency_vs_mock"] = cells.latency_vs_mock(cell, self.m, LATENCY_FRACTION * peak, self.prof["latency_s"],
                                                   self.args.latency_linger_ms)
        if cell.durability == "fsync_ack":  # the disk's own fsync at the cell's bytes/s, right after it
            row["disk_fsync"] = fsync_latency(self.work, lat["rate_achieved"] * cell.record_size,
                                              self.prof["latency_s"], self.m.broker_cpus)
        t = row["throughput"]
        return (f"{t['msgs_s']:,.0f} msg/s, {t['mb_s']:,.1f} MB/s; at {lat['rate_achieved']:,.0f}/s "
                f"p50 {lat['p50_ms']:.2f} p99 {lat['p99_ms']:.2f} p99.9 {lat['p999_ms']:.2f} ms")

    def consume(self, cell: Cell) -> str:
        row = {"broker": cell.broker, "mode": cell.mode, "record_size": cell.record_size}
        self.r["consume"].append(row)
        with cells.broker_for(cell, self.m) as broker:
            topic = cells.make_topic(broker, cell, "consume")
            row["records"] = cells.fill(broker, cell, topic, self.m, self.prof["consume_fill"], 60)
            row.update(cells.consume(broker, cell, topic, self.m, 8 << 20, 60, self.prof["hot_passes"]))
        cold = row["cold"]
        return f"hot {row['hot']['mb_s']:,.0f} MB/s" + (f", cold {cold['mb_s']:,.0f} MB/s" if "mb_s" in cold else "")

    def e2e(self, cell: Cell) -> str:
        peak = next((p["throughput"]["msgs_s"] for p in self.r["produce"]
                     if (p["broker"], p["mode"], p["partitions"], p["record_size"], p["durability"])
                     == (cell.broker, cell.mode, 1, cell.record_size, "page_cache") and "throughput" in p), None)
        with cells.broker_for(cell, self.m) as broker:
            topic = cells.make_topic(broker, cell, "e2e")
            if peak is None:
                peak = cells.throughput(broker, cell, topic, self.m, self.prof["throughput_s"],
                                        self.args.linger_ms, self.prof["max_bytes"])["msgs_s"]
            res = cells.end_to_end(broker, cell, topic, self.m, E2E_FRACTION * peak, self.prof["e2e_s"],
                                   self.args.latency_linger_ms)
        self.latencies[f"e2e {cell.name}"] = res.pop("_latencies_s")
        self.r["e2e"].append({"broker": cell.broker, "mode": cell.mode, "record_size": cell.record_size,
                              "peak_msgs_s": peak, **res})
        return f"at {res['rate_achieved']:,.0f}/s p50 {res['p50_ms']:.2f} p99 {res['p99_ms']:.2f} ms"


def main(argv=None) -> int:
    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)  # unwinds through broker_for: the cell's broker is stopped

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    return Comparison(parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main())
