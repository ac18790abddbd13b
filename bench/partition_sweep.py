"""Produce throughput against partition count, for both storage modes (issue 3's curve).

    .venv/bin/python bench/partition_sweep.py [--partitions 1,16,64,256,1000] [--modes segment,commitlog]
        [--seconds 8] [--value-size 1024] [--flush-interval-ms 100]

For every (mode, partition count) it starts a fresh broker with `--storage-mode MODE
--flush-interval-ms 100` (fsync of every open log each 100 ms, the issue's durability setting),
creates one topic with that many partitions and drives it with one confluent-kafka producer
process (acks=1, records spread uniformly over the partitions: sticky partitioning off, so
every partition receives small batches as it would from many keyed producers). The segment
engine then keeps one active file per partition and fsyncs each of them per interval; the
commitlog engine appends every partition to one file. A figure counts only records the broker
acknowledged and holds: the partitions' high watermarks (ListOffsets) grew by as much. (run.py
also reads every partition's tail back; at 1000 partitions that costs 0.5 s per partition.)

Writes bench/results/partition_sweep.{json,md} and, with matplotlib, partition_sweep.png.
This is a script, not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker_launcher import BrokerProcess, broker_command, free_port  # noqa: E402
from load_workers import produce_worker, run_phase  # noqa: E402
from machine_facts import machine_facts  # noqa: E402
from topic_admin import check_acknowledged, create_topic, held_records  # noqa: E402

BENCH = Path(__file__).resolve().parent


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", default="1,16,64,256,1000")
    ap.add_argument("--modes", default="segment,commitlog")
    ap.add_argument("--seconds", type=float, default=8.0, help="produce time per point")
    ap.add_argument("--value-size", type=int, default=1024)
    ap.add_argument("--flush-interval-ms", type=int, default=100)
    ap.add_argument("--linger-ms", type=int, default=5)
    ap.add_argument("--results-dir", type=Path, default=BENCH / "results")
    return ap.parse_args(argv)


def one_point(args, mode: str, partitions: int, cpus: tuple[set[int] | None, set[int] | None]) -> dict:
    broker_cpus, client_cpus = cpus
    work = Path(tempfile.mkdtemp(prefix=f"sweep-{mode}-{partitions}-", dir=BENCH / "results" / "tmp"))
    (work / "data").mkdir()
    port = free_port()
    extra = ["--storage-mode", mode, "--flush-interval-ms", str(args.flush_interval_ms)]
    cmd = broker_command("twinlog", None, extra, work / "data", "127.0.0.1", port)
    broker = BrokerProcess(cmd, "127.0.0.1", port, work / "broker.log", broker_cpus)
    broker.start()
    try:
        topic = f"sweep-{partitions}"
        create_topic(broker.bootstrap, topic, partitions)
        before = held_records(broker.bootstrap, topic, partitions)
        params = [{"bootstrap": broker.bootstrap, "topic": topic, "value_size": args.value_size,
                   "linger_ms": args.linger_ms, "batch_bytes": 1 << 20, "queue_kbytes": 1 << 20,
                   "count": 50_000_000, "seconds": args.seconds, "check_every": 2000,
                   "flush_timeout": 60, "partition": None,
                   "client_config": {"sticky.partitioning.linger.ms": 0, "partitioner": "random"},
                   "cpus": sorted(client_cpus) if client_cpus else None}]
        run = run_phase(produce_worker, params, args.seconds + 150, broker)
        (res,) = run.results
        check_acknowledged(res, held_records(broker.bootstrap, topic, partitions) - before)
        secs = run.end_time - run.go_time
        return {"mode": mode, "partitions": partitions, "records": res["acked"], "seconds": secs,
                "mb_s": res["bytes"] / 1e6 / secs, "msgs_s": res["acked"] / secs,
                "broker_cpu": run.broker_cpu_s / secs if run.broker_cpu_s is not None else None,
                "client_cpu": res["client_cpu_s"] / secs,
                "avg_batch_bytes": res["avg_batch_bytes"], "avg_batch_records": res["avg_batch_records"]}
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def report(points: list[dict], args, facts: dict) -> str:
    modes = sorted({p["mode"] for p in points})
    counts = sorted({p["partitions"] for p in points})
    by = {(p["mode"], p["partitions"]): p for p in points}
    lines = [f"# Produce throughput against partition count ({datetime.date.today()})", "",
             f"Machine: {facts.get('nproc')} cores, {facts.get('cpu_model', '?')}; "
             f"{args.value_size}-byte values, acks=1, one producer process, records spread "
             f"uniformly over the partitions; broker `--flush-interval-ms {args.flush_interval_ms}`; "
             f"{args.seconds:.0f} s per point.", "",
             "| partitions | " + " | ".join(f"{m} MB/s | {m} msg/s | {m} broker / client CPU" for m in modes)
             + (" | commitlog / segment |" if set(modes) == {"segment", "commitlog"} else " |"),
             "|---" * (1 + 3 * len(modes) + (1 if set(modes) == {"segment", "commitlog"} else 0)) + "|"]
    for n in counts:
        cells = []
        for m in modes:
            p = by.get((m, n))
            cells += ([f"{p['mb_s']:,.1f}", f"{p['msgs_s']:,.0f}",
                       (f"{p['broker_cpu']:.0%}" if p["broker_cpu"] is not None else "?")
                       + f" / {p['client_cpu']:.0%}"]
                      if p and "error" not in p else [p["error"] if p else "—", "", ""])
        ratio = ""
        if set(modes) == {"segment", "commitlog"}:
            s, c = by.get(("segment", n)), by.get(("commitlog", n))
            ratio = f"{c['msgs_s'] / s['msgs_s']:.2f}×" if s and c and "error" not in s and "error" not in c else "—"
        lines.append(f"| {n} | " + " | ".join(cells) + (f" | {ratio} |" if ratio else " |"))
    for m in modes:
        one, most = by.get((m, counts[0])), by.get((m, counts[-1]))
        if one and most and "error" not in one and "error" not in most:
            lines.append(f"\n{m}: {most['msgs_s'] / one['msgs_s']:.0%} of its {counts[0]}-partition "
                         f"throughput at {counts[-1]} partitions.")
    return "\n".join(lines) + "\n"


def plot(points: list[dict], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 4))
    for mode in sorted({p["mode"] for p in points}):
        pts = sorted((p["partitions"], p["msgs_s"]) for p in points if p["mode"] == mode and "error" not in p)
        if pts:
            ax.plot(*zip(*pts), marker="o", label=mode)
    ax.set_xscale("log")
    ax.set_xlabel("partitions")
    ax.set_ylabel("records/s acknowledged")
    ax.set_title("produce throughput, fsync every 100 ms")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main(argv=None) -> int:
    args = parse_args(argv)
    (BENCH / "results" / "tmp").mkdir(parents=True, exist_ok=True)
    cpus = sorted(os.sched_getaffinity(0))
    split = ({cpus[0]}, set(cpus[1:])) if len(cpus) >= 2 else (None, None)
    if split[1]:
        os.sched_setaffinity(0, split[1])
    points = []
    for mode in args.modes.split(","):
        for n in (int(x) for x in args.partitions.split(",")):
            print(f"[{mode}, {n} partitions]", flush=True)
            try:
                p = one_point(args, mode, n, split)
                print(f"  {p['msgs_s']:,.0f} msg/s, {p['mb_s']:,.1f} MB/s, broker CPU "
                      f"{p['broker_cpu'] or 0:.0%}, client CPU {p['client_cpu']:.0%}", flush=True)
            except Exception as e:  # noqa: BLE001 - one failed point is reported, the sweep goes on
                p = {"mode": mode, "partitions": n, "error": f"{type(e).__name__}: {str(e)[:200]}"}
                print(f"  FAILED: {p['error']}", flush=True)
            points.append(p)
    facts = machine_facts()
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "partition_sweep.json").write_text(json.dumps(
        {"points": points, "machine": facts, "settings": {k: str(v) for k, v in vars(args).items()}}, indent=1))
    md = report(points, args, facts)
    (args.results_dir / "partition_sweep.md").write_text(md)
    plotted = plot(points, args.results_dir / "partition_sweep.png")
    print("\n" + md + (f"\nplot: {args.results_dir / 'partition_sweep.png'}" if plotted else ""))
    return 1 if any("error" in p for p in points) else 0


if __name__ == "__main__":
    sys.exit(main())
