"""twinlog's first benchmark: produce MB/s (~1 MiB batches), produce msg/s (100-byte records),
fetch MB/s from a hot page cache, and the disk's sequential write rate, all in one run.

    .venv/bin/python bench/run.py [--quick] [--broker twinlog|tansu]
        [--broker-args "--storage-mode commitlog --flush-messages 1"] [--broker-cmd TEMPLATE]

It starts the broker (data in a temporary directory under bench/results/tmp, on the repo's
disk), creates the topics, and drives it with confluent-kafka (librdkafka) producers and a
consumer in separate processes. With two or more cores the broker is pinned to CPU 0 and the
load generators to the others (`--pin none` leaves both to the scheduler). Every figure is
printed with its ratio to its target and to the machine's limit, and written to
bench/results/latest-<broker>.{json,md}.

Every phase has a time and byte budget (the default run takes 70-110 s here and stays under
3 min whatever the broker does; --quick 15-25 s). A figure is only reported from records the
broker acknowledged and that it is seen to hold (watermarks and the tail read back, see
offset_check.py); a delivery error, a lost or out-of-order record fails the phase loudly and
the run exits 1 (records beyond the acknowledged count, from client retries, are noted). The broker this script started is stopped on every way out.
This is a script, not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker_launcher import STORAGE_NOTE, BrokerError, BrokerProcess, broker_command, free_port  # noqa: E402
from load_workers import PhaseError, fetch_worker, produce_worker, run_phase  # noqa: E402
from machine_ceilings import loopback_sendfile_rate, page_cache_write_rate  # noqa: E402
from machine_facts import dirty_mib, disk_write_rate, filesystem_of, machine_facts  # noqa: E402
from offset_check import partition_ends, watermark_disagreement  # noqa: E402
from offset_check import total as offsets_total  # noqa: E402
import results_report  # noqa: E402

BENCH = Path(__file__).resolve().parent
PROFILES = {
    # dd MiB per run and runs (median; this VM's disk absorbs short bursts at ~2 GB/s and
    # sustains ~0.5 GB/s, so runs are GiB-sized); per produce run a byte or record budget and
    # seconds; fetch passes (the first one warms, not counted) within one budget; loopback.
    "default": dict(dd_mib=2048, dd_runs=3, large_bytes=2 << 30, large_s=12, small_records=5_000_000,
                    small_s=12, runs=3, fetch_passes=4, fetch_budget_s=45, sync_timeout_s=30,
                    loop_total_mib=4096, loop_runs=2),
    "quick": dict(dd_mib=1024, dd_runs=2, large_bytes=1 << 30, large_s=6, small_records=2_000_000,
                  small_s=6, runs=1, fetch_passes=2, fetch_budget_s=20, sync_timeout_s=15,
                  loop_total_mib=2048, loop_runs=2),
}


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the short profile (~20 s)")
    ap.add_argument("--broker", choices=["twinlog", "tansu"], default="twinlog")
    ap.add_argument("--broker-cmd", help="command template with {data_dir} {host} {port} "
                                         "(and {twinlog} / {tansu} for the binaries) instead of the preset")
    ap.add_argument("--broker-args", default="", help="extra broker arguments, one shell-quoted string")
    ap.add_argument("--value-size", type=int, default=64 * 1024, help="value bytes, ~1 MiB-batch phase")
    ap.add_argument("--small-value-size", type=int, default=100)
    ap.add_argument("--batch-bytes", type=int, default=1 << 20, help="librdkafka batch.size")
    ap.add_argument("--linger-large", type=int, default=5, help="linger.ms, ~1 MiB-batch phase")
    ap.add_argument("--linger-small", type=int, default=10, help="linger.ms, 100 B phase")
    ap.add_argument("--fetch-bytes", type=int, default=4 << 20,
                    help="fetch.max.bytes and max.partition.fetch.bytes of the consumer (2-4 MiB "
                         "fetched fastest here; at 64 MiB librdkafka's own parsing halves the rate)")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--producers", type=int, default=1, help="producer processes per produce run")
    ap.add_argument("--pin", choices=["split", "none"], default="split")
    ap.add_argument("--results-dir", type=Path, default=BENCH / "results")
    ap.add_argument("--stem", help="output file names: STEM.json, STEM.md (default latest-BROKER, so the "
                                    "brokers' latest runs sit side by side)")
    return ap.parse_args(argv)


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.prof = PROFILES["quick" if args.quick else "default"]
        ncpu = len(os.sched_getaffinity(0))
        cpus = sorted(os.sched_getaffinity(0))
        if args.pin == "split" and ncpu >= 2:
            self.broker_cpus, self.client_cpus = {cpus[0]}, set(cpus[1:])
            pinning = (f"Pinning: broker on CPU {cpus[0]} (taskset), load generators and this script on "
                       f"CPU {','.join(map(str, cpus[1:]))} (sched_setaffinity).")
        else:
            self.broker_cpus = self.client_cpus = None
            pinning = "Pinning: none; the scheduler places broker and load generators."
        self.broker: BrokerProcess | None = None
        self.r: dict = {"profile": "quick" if args.quick else "default", "pinning": pinning,
                        "started_at": datetime.datetime.now().isoformat(timespec="seconds"),
                        "value_size": args.value_size, "errors": [], "notes": [],
                        "settings": {k: str(v) for k, v in vars(args).items()}}

    # ------------------------------------------------------------------ phases
    def run(self) -> int:
        t_start = time.monotonic()
        if self.client_cpus:
            os.sched_setaffinity(0, self.client_cpus)
        tmp_root = BENCH / "results" / "tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        work = self.work = Path(tempfile.mkdtemp(prefix="run-", dir=tmp_root))
        self.r["machine"] = machine_facts()
        self.r["filesystem"] = filesystem_of(work)
        try:
            self.step("disk", lambda: self.disk(work))
            self.step("loopback", lambda: self.loopback(work))
            self.start_broker(work)
            self.create_topics()
            self.step("produce_large", lambda: self.produce("produce_large", self.topic_large,
                                                            self.args.value_size, self.args.linger_large,
                                                            self.prof["large_bytes"] // self.args.value_size,
                                                            self.prof["large_s"]))
            self.step("produce_small", lambda: self.produce("produce_small", self.topic_small,
                                                            self.args.small_value_size, self.args.linger_small,
                                                            self.prof["small_records"], self.prof["small_s"]))
            if self.r["produce_large"].get("status") == "ok":
                self.step("fetch", self.fetch)
        except (PhaseError, RuntimeError, OSError) as e:
            self.r["errors"].append(f"run stopped: {e}")
        except KeyboardInterrupt:
            self.r["errors"].append("interrupted (Ctrl-C)")
            raise
        finally:
            self.stop_broker()
            shutil.rmtree(work, ignore_errors=True)
            self.r["elapsed_s"] = time.monotonic() - t_start
            self.r.setdefault("broker", {"kind": self.args.broker, "storage": "?", "command_display": []})
            self.r["client_settings"] = self.client_settings()
            jp, mp_ = results_report.write(self.r, self.args.results_dir,
                                           self.args.stem or f"latest-{self.args.broker}")
        print("\n" + results_report.console_summary(self.r))
        for e in self.r["errors"]:
            print(f"FAILED: {e}", file=sys.stderr)
        print(f"\n{self.r['pinning']}\nwrote {jp} and {mp_} ({self.r['elapsed_s']:.0f} s)")
        return 1 if self.r["errors"] else 0

    def settle_page_cache(self) -> dict:
        """sync(1) so that a run starts with no dirty pages: runs are then independent of the
        ones before them, which would otherwise leave the kernel writing back while this one
        runs. Not part of any timed window."""
        before, t0 = dirty_mib(), time.monotonic()
        try:
            subprocess.run(["sync"], timeout=self.prof["sync_timeout_s"], check=False)
        except subprocess.TimeoutExpired:
            self.r["notes"].append(f"sync did not finish in {self.prof['sync_timeout_s']} s; "
                                   "a run started with dirty pages still being written back")
        return {"dirty_mib_before_sync": before, "sync_s": time.monotonic() - t0,
                "dirty_mib_at_start": dirty_mib()}

    def client_settings(self) -> str:
        a = self.args
        return (f"producers: {a.producers} process(es), acks=1, compression none, batch.size={a.batch_bytes:,}, "
                f"linger.ms {a.linger_large} (large values) / {a.linger_small} (100 B), partitions: "
                f"{a.partitions}; consumer: assign() from the first offset, no commits, "
                f"fetch.max.bytes = max.partition.fetch.bytes = {a.fetch_bytes:,}")

    def step(self, name: str, fn) -> None:
        """Run one phase; a phase that cannot give an honest figure is recorded as failed."""
        print(f"[{name}] ...", flush=True)
        try:
            fn()
        except (PhaseError, BrokerError) as e:
            self.r[name] = {**self.r.get(name, {}), "status": "FAILED"}
            if self.broker and self.broker.proc.poll() is not None:
                raise  # a dead broker ends the run; the rest would only fail too
            self.r["errors"].append(f"{name}: {e}")
            print(f"[{name}] FAILED: {e}", file=sys.stderr, flush=True)

    def disk(self, work: Path) -> None:
        samples = []
        for _ in range(self.prof["dd_runs"]):
            d = disk_write_rate(work, self.prof["dd_mib"], timeout=120)
            samples.append(d)
            print(f"  {d['bytes'] >> 20} MiB in {d['seconds']:.2f} s = {d['mb_s']:,.0f} MB/s", flush=True)
        self.r["disk"] = {"mb_s": statistics.median(d["mb_s"] for d in samples), "samples": samples,
                          "command": samples[0]["command"], "status": "ok"}

    def loopback(self, work: Path) -> None:
        samples = []
        for _ in range(self.prof["loop_runs"]):
            lo = loopback_sendfile_rate(str(work), 256, self.prof["loop_total_mib"],
                                        self.broker_cpus, self.client_cpus, timeout=60)
            samples.append(lo)
            print(f"  {lo['bytes'] / 1e6:,.0f} MB in {lo['seconds']:.2f} s = {lo['mb_s']:,.0f} MB/s", flush=True)
        best = max(samples, key=lambda x: x["mb_s"])  # a ceiling: the best the machine managed
        self.r["loopback"] = {**best, "samples": samples}

    def start_broker(self, work: Path) -> None:
        kind, port = self.args.broker, free_port()
        data_dir = work / "data"
        data_dir.mkdir()
        cmd = broker_command(kind, self.args.broker_cmd, shlex.split(self.args.broker_args),
                             data_dir, "127.0.0.1", port)
        storage = STORAGE_NOTE.get(kind, "?") if not self.args.broker_cmd else "custom command"
        if kind == "twinlog":
            extra = shlex.split(self.args.broker_args)
            mode = _flag_value(extra, "--storage-mode") or "segment (default)"
            flush = " ".join(a for a in extra if a.startswith("--flush")) or "default flush policy"
            storage = f"{storage}; storage mode {mode}; {flush}"
        self.r["broker"] = {"kind": kind, "storage": storage, "command": cmd,
                            "command_display": [c.replace(str(work), "$WORK") for c in cmd]}
        self.broker = BrokerProcess(cmd, "127.0.0.1", port, work / "broker.log", self.broker_cpus)
        print(f"[broker] {' '.join(cmd)}", flush=True)
        self.broker.start()

    def stop_broker(self) -> None:
        if self.broker is None:
            return
        tail = self.broker.log_tail(800)
        code = self.broker.stop()
        self.r["broker"]["exit_code"] = code
        if code not in (0, -signal.SIGTERM, None):
            self.r["notes"].append(f"broker exit code {code} on SIGTERM; log tail: {tail[-400:]!r}")
        self.broker = None

    def create_topics(self) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        stamp = int(time.time())
        self.topic_large, self.topic_small = f"bench-large-{stamp}", f"bench-small-{stamp}"
        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap})
        futures = admin.create_topics([NewTopic(t, self.args.partitions, 1)
                                       for t in (self.topic_large, self.topic_small)], request_timeout=30)
        for topic, f in futures.items():
            f.result(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait until both have a leader for every partition
            md = admin.list_topics(timeout=10).topics
            if all(t in md and len(md[t].partitions) == self.args.partitions
                   and all(p.leader >= 0 for p in md[t].partitions.values())
                   for t in (self.topic_large, self.topic_small)):
                return
            time.sleep(0.2)
        raise PhaseError("created topics never showed a leader in metadata")

    def ends(self, topic: str):
        return partition_ends(self.broker.bootstrap, topic, self.args.partitions)

    def produce(self, name: str, topic: str, value_size: int, linger_ms: int, records: int, seconds: float):
        n = self.args.producers
        runs, flush_timeout = [], 60
        before = self.ends(topic)
        for i in range(self.prof["runs"]):
            params = [{"bootstrap": self.broker.bootstrap, "topic": topic, "value_size": value_size,
                       "linger_ms": linger_ms, "batch_bytes": self.args.batch_bytes,
                       "queue_kbytes": 1 << 20, "count": records // n, "seconds": seconds,
                       "check_every": 2000, "flush_timeout": flush_timeout,
                       "partition": 0 if self.args.partitions == 1 else None,
                       "cpus": sorted(self.client_cpus) if self.client_cpus else None} for _ in range(n)]
            settle = self.settle_page_cache()
            ceiling = None
            if value_size >= 1024:  # the byte-rate phase: measure the page cache right before it
                ceiling = page_cache_write_rate(str(self.work), records * value_size >> 20, self.broker_cpus)
                settle = self.settle_page_cache()
            run = run_phase(produce_worker, params, seconds + flush_timeout + 60, self.broker)
            dirty_after = dirty_mib()
            res = run.results
            failed = sum(x["failed"] for x in res)
            unacked = sum(x["unacked"] for x in res)
            if failed or unacked:
                errs = [e for x in res for e in x["errors"]][:3]
                raise PhaseError(f"run {i + 1}: {failed} delivery failures, {unacked} never acknowledged: {errs}")
            acked = sum(x["acked"] for x in res)
            client_errors = [e for x in res for e in x["client_errors"]]
            if client_errors:
                self.r["notes"].append(f"{name} run {i + 1}: librdkafka reported {client_errors[:3]}")
            after = self.ends(topic)
            on_broker = offsets_total(after) - offsets_total(before)
            expected = acked + sum(x["warmup_acked"] for x in res)
            if on_broker < expected:
                raise PhaseError(f"run {i + 1}: {acked:,} records acknowledged (+ warm-up) but the "
                                 f"broker's partitions grew by {on_broker:,}")
            if on_broker > expected:
                self.r["notes"].append(f"{name} run {i + 1}: partitions grew by {on_broker - expected} "
                                       f"more records than acknowledged (client retries: "
                                       f"{sum(x['txretries'] for x in res)})")
            disagreement = watermark_disagreement(after)
            if disagreement:
                self.r["notes"].append(f"{name} run {i + 1}: ListOffsets disagrees with the records read "
                                       f"back ({disagreement}); counts use the records read back")
            before = after
            secs = run.end_time - run.go_time
            nbytes = sum(x["bytes"] for x in res)
            rate = nbytes / 1e6 / secs if value_size >= 1024 else acked / secs
            runs.append({"records": acked, "bytes": nbytes, "seconds": secs, "rate": rate,
                         "mb_s": nbytes / 1e6 / secs, "msgs_s": acked / secs,
                         "broker_cpu_s": run.broker_cpu_s, "client_cpu_s": sum(x["client_cpu_s"] for x in res),
                         "avg_batch_bytes": results_report.mean_present([x["avg_batch_bytes"] for x in res]),
                         "avg_batch_records": results_report.mean_present([x["avg_batch_records"] for x in res]),
                         "budget_hit": acked < records // n * n, **settle, "dirty_mib_after": dirty_after,
                         "page_cache_write_mb_s": ceiling and ceiling["mb_s"]})
            print(f"  run {i + 1}: {acked:,} records, {nbytes / 1e6:,.0f} MB in {secs:.2f} s = "
                  f"{nbytes / 1e6 / secs:,.0f} MB/s, {acked / secs:,.0f} msg/s"
                  + (f" (plain write() just before: {ceiling['mb_s']:,.0f} MB/s)" if ceiling else ""), flush=True)
        self.r[name] = results_report.summarise(runs, value_size=value_size, linger_ms=linger_ms)

    def fetch(self) -> None:
        ends = self.ends(self.topic_large)
        self.r["fetch_settle"] = self.settle_page_cache()  # no writeback of the produce phases meanwhile
        ranges = {p: (e.low, e.end) for p, e in ends.items()}
        expected = sum(hi - lo for lo, hi in ranges.values())
        produced = self.r["produce_large"]["records"] + self.args.producers * self.prof["runs"]
        if expected != produced:
            raise PhaseError(f"the topic holds {expected:,} records, {produced:,} were acknowledged")
        runs, budget_end = [], time.monotonic() + self.prof["fetch_budget_s"]
        for i in range(self.prof["fetch_passes"]):
            left = budget_end - time.monotonic()
            if runs and left < 1.2 * runs[-1]["seconds"] + 1:
                break  # another pass would not fit in the phase budget
            params = [{"bootstrap": self.broker.bootstrap, "topic": self.topic_large,
                       "ranges": {str(p): list(v) for p, v in ranges.items()},
                       "fetch_bytes": self.args.fetch_bytes, "seconds": max(left, 1.0),
                       "cpus": sorted(self.client_cpus) if self.client_cpus else None}]
            run = run_phase(fetch_worker, params, max(left, 1.0) + 60, self.broker)
            x = run.results[0]
            if x["consumed"] == 0 or x["t_first"] is None:
                raise PhaseError(f"pass {i + 1}: no record fetched in {max(left, 1.0):.0f} s "
                                 f"(client errors: {x['client_errors']})")
            steady_s = x["t1"] - x["t_first"]
            steady_bytes = x["bytes"] - x["first_bytes"]
            rate = steady_bytes / 1e6 / steady_s if steady_s > 0 else None
            runs.append({"records": x["consumed"], "bytes": x["bytes"], "seconds": x["t1"] - run.go_time,
                         "rate": rate, "mb_s": rate, "mb_s_from_assign": x["bytes"] / 1e6 / (x["t1"] - x["t0"]),
                         "first_record_after_s": x["t_first"] - x["t0"], "complete": x["consumed"] == expected,
                         "broker_cpu_s": run.broker_cpu_s, "client_cpu_s": x["client_cpu_s"],
                         "warm_up": False, "client_errors": x["client_errors"]})
            if x["client_errors"]:
                self.r["notes"].append(f"fetch pass {i + 1}: librdkafka reported {x['client_errors'][:3]}")
            print(f"  pass {i + 1}: {x['consumed']:,} of {expected:,} records, {x['bytes'] / 1e6:,.0f} MB, "
                  f"{rate or 0:,.0f} MB/s", flush=True)
        if len(runs) > 1:
            runs[0]["warm_up"] = True  # it warms the cache, the broker's code paths and the client
        else:
            self.r["notes"].append("fetch: only one pass fitted in the phase budget; it is counted, "
                                   "although it also warmed the cache")
        counted = [r for r in runs if not r["warm_up"]]
        self.r["fetch"] = results_report.summarise(counted, all_passes=runs, fetch_bytes=self.args.fetch_bytes,
                                         expected_records=expected)
        if not all(r["complete"] for r in runs):
            self.r["fetch"]["status"] = "partial: the time budget ended a pass before the end of the topic"


def _flag_value(args: list[str], flag: str) -> str | None:
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def main(argv=None) -> int:
    bench = Bench(parse_args(argv))

    def on_signal(signum, _frame):
        bench.r["errors"].append(f"interrupted by signal {signal.Signals(signum).name}")
        raise SystemExit(128 + signum)  # unwinds through run()'s finally: the broker is stopped

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    atexit.register(lambda: bench.broker and bench.broker.stop())
    return bench.run()


if __name__ == "__main__":
    sys.exit(main())
