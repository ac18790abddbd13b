"""Replicated cells of the mode comparison (issue 14): what RF=3 acks=all costs against RF=1
acks=1 on the same three-broker cluster, and how long a leader failover takes.

    .venv/bin/python bench/replicated.py --quick      # about 7 minutes (20 kills per timeout)
    .venv/bin/python bench/replicated.py --full       # longer phases
        [--kills N] [--modes segment,commitlog] [--results-dir DIR]
        [--flush-messages 1]   # every broker fsyncs before an ack, followers before they report

Throughput cells: for each storage mode one cluster (etcd + 3 brokers, default settings), and
on it, for 1 and 64 partitions, two topics measured back to back in the same run: RF=1 with
acks=1, and RF=3 min.insync.replicas=2 with acks=all. Each gets a peak produce phase (one
confluent-kafka process, queue full; compare_cells' rules: only records the brokers' high
watermarks confirm count) and send-to-ack latency at half that peak. The three brokers and the
load generator share this machine's cores unpinned, so every row carries each broker's CPU
(CPU-seconds per second of the window), under load and idle just before: the ratio is only
readable next to them.

Failover cells: a fresh cluster per storage mode and broker session timeout (`--failover-sessions`:
9 s, the default and Kafka KRaft's broker.session.timeout.ms; 2 s on request), one RF=3
min.insync.replicas=2 partition, 20 leader kills, then a SIGTERM rolling restart of all three
brokers (replicated_failover.py). Results: bench/results/replicated-<profile>.{json,md}
(replicated-<profile>-flush<N>.* with --flush-messages N).
This is a script, not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import replicated_report  # noqa: E402
from compare_cells import SAMPLES_PER_S, percentiles  # noqa: E402
from latency_workers import paced_produce_worker  # noqa: E402
from load_workers import produce_worker, run_phase  # noqa: E402
from machine_facts import machine_facts  # noqa: E402
from replicated_cluster import ReplicatedCluster  # noqa: E402
from replicated_failover import measure_failovers, measure_rolling_restart  # noqa: E402
from topic_admin import check_acknowledged, held_records  # noqa: E402

BENCH = Path(__file__).resolve().parent
DEFAULT_SESSION_MS = 9000  # BrokerConfig.broker_session_timeout_ms
SHORT_SESSION_MS = 2000
LATENCY_FRACTION = 0.5
IDLE_S = 3.0
# (label, replication factor, producer acks, topic configs)
REPLICATION = [("RF=1 acks=1", 1, "1", {}), ("RF=3 acks=all", 3, "all", {"min.insync.replicas": "2"})]
PROFILES = {
    "quick": dict(partitions=[1, 64], record_size=1024, throughput_s=3.0, latency_s=2.0, kills=20),
    "full": dict(partitions=[1, 64], record_size=1024, throughput_s=8.0, latency_s=5.0, kills=20),
}


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_const", dest="profile", const="quick")
    g.add_argument("--full", action="store_const", dest="profile", const="full")
    ap.set_defaults(profile="quick")
    ap.add_argument("--modes", default="segment,commitlog")
    ap.add_argument("--kills", type=int, help="leader kills per session timeout (profile's default otherwise)")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--skip-failover", action="store_true")
    ap.add_argument("--failover-sessions", default=f"{DEFAULT_SESSION_MS}",
                    help=f"broker session timeouts (ms) to measure failover at, e.g. {DEFAULT_SESSION_MS},{SHORT_SESSION_MS}")
    ap.add_argument("--results-dir", type=Path, default=BENCH / "results")
    ap.add_argument("--flush-messages", type=int, default=0,
                    help="the brokers' --flush-messages (1: fsync before ack, and followers before they report)")
    return ap.parse_args(argv)


def loadavg() -> list[float]:
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def _per_s(cpu: dict[int, float], seconds: float) -> dict[str, float]:
    return {str(node): s / seconds for node, s in cpu.items()}


def _producer_config(acks: str, partitions: int) -> dict:
    spread = {} if partitions == 1 else {"sticky.partitioning.linger.ms": 0, "partitioner": "random"}
    return {"acks": acks, **spread}


def throughput(cluster: ReplicatedCluster, topic: str, partitions: int, acks: str, prof: dict) -> dict:
    """compare_cells.throughput against the cluster, with the producer's acks set."""
    before = held_records(cluster.bootstrap, topic, partitions)
    size = prof["record_size"]
    params = [{"bootstrap": cluster.bootstrap, "topic": topic, "value_size": size, "linger_ms": 5,
               "batch_bytes": 1 << 20, "queue_kbytes": 1 << 20, "count": (1 << 30) // size,
               "seconds": prof["throughput_s"], "check_every": 2000, "flush_timeout": 60, "cpus": None,
               "partition": 0 if partitions == 1 else None, "client_config": _producer_config(acks, partitions)}]
    run = run_phase(produce_worker, params, prof["throughput_s"] + 150, cluster.cpu)
    (res,) = run.results
    check_acknowledged(res, held_records(cluster.bootstrap, topic, partitions) - before)
    secs = run.end_time - run.go_time
    return {"records": res["acked"], "seconds": secs, "msgs_s": res["acked"] / secs,
            "mb_s": res["bytes"] / 1e6 / secs, "client_cpu": res["client_cpu_s"] / secs,
            "broker_cpu": _per_s(cluster.cpu.per_broker(), secs), "avg_batch_bytes": res.get("avg_batch_bytes")}


def latency(cluster: ReplicatedCluster, topic: str, partitions: int, acks: str, rate: float, prof: dict) -> dict:
    """Send-to-ack latency of a producer held at `rate` (compare_cells.latency, acks set)."""
    before = held_records(cluster.bootstrap, topic, partitions)
    params = [{"bootstrap": cluster.bootstrap, "topic": topic, "value_size": prof["record_size"], "linger_ms": 1,
               "batch_bytes": 1 << 20, "rate": rate, "seconds": prof["latency_s"], "acks": acks,
               "sample_every": max(1, int(rate / SAMPLES_PER_S)), "flush_timeout": 60, "partitions": partitions,
               "cpus": None, "partition": 0 if partitions == 1 else None,
               "client_config": {"max.in.flight.requests.per.connection": 5}}]
    run = run_phase(paced_produce_worker, params, prof["latency_s"] + 150, cluster.cpu)
    (res,) = run.results
    check_acknowledged(res, held_records(cluster.bootstrap, topic, partitions) - before)
    secs = res["send_seconds"]
    return {"rate_asked": rate, "rate_achieved": res["sent"] / secs, "samples": len(res["latencies_s"]),
            **percentiles(res["latencies_s"]), "broker_cpu": _per_s(cluster.cpu.per_broker(), secs)}


def idle_cpu(cluster: ReplicatedCluster, seconds: float) -> dict[str, float]:
    """Each broker's CPU with no client load: replica fetchers and etcd keep-alives of every
    partition present (__consumer_offsets' 50 included, created by the first watermark query)."""
    cluster.cpu.cpu_seconds()
    time.sleep(seconds)
    cluster.cpu.cpu_seconds()
    return _per_s(cluster.cpu.per_broker(), seconds)


class Replicated:
    def __init__(self, args: argparse.Namespace):
        self.args, self.prof = args, dict(PROFILES[args.profile])
        if args.kills:
            self.prof["kills"] = args.kills
        (BENCH / "results" / "tmp").mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix="replicated-", dir=BENCH / "results" / "tmp"))
        self.r: dict = {"profile": args.profile, "started_at": datetime.datetime.now().isoformat(timespec="seconds"),
                        "machine": machine_facts(), "loadavg_before": loadavg(),
                        "settings": {**self.prof, "flush_messages": args.flush_messages},
                        "pinning": "none: 3 brokers, etcd and the load generator share every CPU",
                        "produce": [], "failover": [], "errors": []}

    def run(self) -> int:
        t0 = time.monotonic()
        if not self.args.skip_throughput:
            for mode in self.args.modes.split(","):
                self._step(f"throughput {mode}", lambda mode=mode: self.produce_cells(mode))
        if not self.args.skip_failover:
            for mode in self.args.modes.split(","):
                for session_ms in map(int, self.args.failover_sessions.split(",")):
                    self._step(f"failover {mode} session {session_ms} ms",
                               lambda m=mode, s=session_ms: self.failover(m, s))
        shutil.rmtree(self.work, ignore_errors=True)
        self.r["loadavg_after"] = loadavg()
        self.r["elapsed_s"] = time.monotonic() - t0
        stem = f"replicated-{self.args.profile}" + (f"-flush{self.args.flush_messages}" if self.args.flush_messages else "")
        self.args.results_dir.mkdir(parents=True, exist_ok=True)
        (self.args.results_dir / f"{stem}.json").write_text(json.dumps(self.r, indent=1, default=str))
        md = replicated_report.markdown(self.r)
        (self.args.results_dir / f"{stem}.md").write_text(md)
        print("\n" + md)
        return 1 if self.r["errors"] else 0

    def _step(self, name: str, fn) -> None:
        print(f"== {name} (load {loadavg()})", flush=True)
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - one failed step is reported; the run goes on
            self.r["errors"].append(f"{name}: {type(e).__name__}: {str(e)[:300]}")
            print(f"FAILED {name}: {e}\n{traceback.format_exc()[-1500:]}", flush=True)

    def _broker_args(self) -> tuple[str, ...]:
        return ("--flush-messages", str(self.args.flush_messages)) if self.args.flush_messages else ()

    def produce_cells(self, mode: str) -> None:
        with ReplicatedCluster(mode, DEFAULT_SESSION_MS, self.work, self._broker_args()) as cluster:
            for partitions in self.prof["partitions"]:
                for label, rf, acks, configs in REPLICATION:
                    row = {"mode": mode, "partitions": partitions, "replication": label, "rf": rf, "acks": acks,
                           "record_size": self.prof["record_size"]}
                    self.r["produce"].append(row)
                    try:
                        topic = f"r{rf}-p{partitions}-{int(time.time() * 1000)}"
                        cluster.create_topic(topic, partitions, rf, configs)
                        held_records(cluster.bootstrap, topic, partitions)  # __consumer_offsets exists from here
                        row["idle_cpu"] = idle_cpu(cluster, IDLE_S)
                        row["throughput"] = t = throughput(cluster, topic, partitions, acks, self.prof)
                        row["latency"] = lat = latency(cluster, topic, partitions, acks,
                                                       LATENCY_FRACTION * t["msgs_s"], self.prof)
                    except Exception as e:
                        row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
                        raise
                    cpu = " ".join(f"b{n} {c:.0%}" for n, c in t["broker_cpu"].items())
                    print(f"{mode} p{partitions} {label}: {t['msgs_s']:,.0f} msg/s ({cpu}, client "
                          f"{t['client_cpu']:.0%}); at {lat['rate_achieved']:,.0f}/s p50 {lat['p50_ms']:.1f} "
                          f"p99 {lat['p99_ms']:.1f} ms", flush=True)

    def failover(self, mode: str, session_ms: int) -> None:
        row = {"mode": mode, "session_ms": session_ms, "kills_asked": self.prof["kills"]}
        self.r["failover"].append(row)
        with ReplicatedCluster(mode, session_ms, self.work, self._broker_args()) as cluster:
            row.update(measure_failovers(cluster, self.prof["kills"], log=lambda s: print(s, flush=True)))
            row["rolling_restart"] = measure_rolling_restart(cluster, log=lambda s: print(s, flush=True))


def main(argv=None) -> int:
    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)  # unwinds through the cluster's __exit__: every process stopped

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    return Replicated(parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main())
