"""The p99 targets, run after run: issue 38 asks each latency target to hold "in each of 5
consecutive runs", not in one.

    .venv/bin/python bench/latency_runs.py [--runs 5] [--modes segment,commitlog]   # make bench-latency

Each run takes, per layout, the cells of compare_report.LATENCY_TARGETS (acks=1 100 B; fsync
before ack 1 KB; one partition) exactly as `make bench` does (compare.py's quick profile, its
produce_cell): a fresh broker on CPU 0, 3 s at peak, 2 s paced at half of that peak, then the
same paced load against librdkafka's mock cluster on the broker's CPU, which fsyncs nothing and
keeps records in memory: the mock's p99 says what the machine and the load generator give
any broker at that moment. After a fsync-before-ack cell, compare.py also measures the disk's own
fsync latency at the cell's bytes/s (machine_ceilings.fsync_latency): what any broker that
fsyncs before it acknowledges was paying then. The layouts alternate within a run, so neither gets the quiet
minutes. Results: bench/results/latency-runs.{json,md}; about 40 s a run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare import Comparison, parse_args as compare_args  # noqa: E402
from compare_cells import Cell  # noqa: E402
from compare_report import LATENCY_TARGETS, _get  # noqa: E402


def run(runs: int, modes: list[str]) -> dict:
    comparison = Comparison(compare_args(["--quick", "--no-tansu"]))
    if comparison.m.client_cpus:
        os.sched_setaffinity(0, comparison.m.client_cpus)
    out: dict = {"started_at": datetime.datetime.now().isoformat(timespec="seconds"),
                 "machine": comparison.r["machine"], "pinning": comparison.r["pinning"],
                 "load_at_start": os.getloadavg(), "runs": []}
    try:
        for n in range(1, runs + 1):
            started = time.monotonic()
            cells = []
            for mode in modes:
                for size, durability, goal_ms, what in LATENCY_TARGETS:
                    cell = Cell("twinlog", mode, 1, size, durability)
                    try:
                        comparison.produce_cell(cell)
                    except Exception as exc:  # noqa: BLE001 - a failed cell is a row that says so
                        print(f"run {n} {cell.name}: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr)
                    row = comparison.r["produce"][-1]
                    p99, rate = _get(row, "latency", "p99_ms"), _get(row, "latency", "rate_achieved")
                    cells.append({"mode": mode, "target": what, "goal_ms": goal_ms, "p99_ms": p99,
                                  "p50_ms": _get(row, "latency", "p50_ms"),
                                  "rate": rate, "peak": _get(row, "throughput", "msgs_s"),
                                  "mock_p99_ms": _get(row, "latency_vs_mock", "p99_ms"),
                                  "disk_fsync_ms": row.get("disk_fsync"),
                                  "met": p99 is not None and p99 <= goal_ms, "error": row.get("error")})
                    print(f"run {n} {mode:9} {what:28} p99 {_ms(p99)} ({_reference(cells[-1])}) at {_n(rate)}/s",
                          flush=True)
            out["runs"].append({"run": n, "seconds": round(time.monotonic() - started, 1), "cells": cells})
    finally:
        shutil.rmtree(comparison.work, ignore_errors=True)
    return out


def _reference(cell: dict) -> str:
    """The mock's p99 at the cell's load; for a fsync cell also the disk's fsync p99 / max at its
    bytes/s. The max matters: one stall of S ms holds the records of the next ~2S ms (the client
    keeps 5 requests in flight, and the broker has half its peak to spare to catch up), so a
    single 10 ms fsync puts ~1% of a 2 s window at 10 ms or more."""
    disk = cell["disk_fsync_ms"]
    return f"mock {_ms(cell['mock_p99_ms'])}" + (f", fsync {_ms(disk.get('p99_ms'))} / {_ms(disk.get('max_ms'))}"
                                                 if disk else "")


def _ms(v) -> str:
    return "—" if v is None else f"{v:.2f}"


def _n(v) -> str:
    return "—" if v is None else f"{v:,.0f}"


def markdown(r: dict) -> str:
    modes = list(dict.fromkeys(c["mode"] for run in r["runs"] for c in run["cells"]))
    columns = [(mode, what) for mode in modes for _, _, _, what in LATENCY_TARGETS]
    load = ", ".join(f"{x:.1f}" for x in r["load_at_start"])
    m = r["machine"]
    lines = [f"Latency runs: {m['nproc']} CPUs ({m['cpu_model']}), commit {m['git_commit']}, {r['pinning']}; "
             f"started {r['started_at']}, load average {load}. p99 ms at half peak, the mock's at the "
             "same load in brackets, and for fsync before ack the disk's own fsync p99 / max at the "
             "cell's bytes/s, measured right after it (bench/machine_ceilings.fsync_latency); * misses the "
             "target.", "",
             "| run | " + " | ".join(f"{mode}: {what}" for mode, what in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for run in r["runs"]:
        by = {(c["mode"], c["target"]): c for c in run["cells"]}
        row = []
        for key in columns:
            c = by.get(key)
            row.append("—" if c is None else f"{_ms(c['p99_ms'])}{'' if c['met'] else '*'} ({_reference(c)})")
        lines.append(f"| {run['run']} | " + " | ".join(row) + " |")
    lines.append("")
    for mode, what in columns:
        cells = [c for run in r["runs"] for c in run["cells"] if (c["mode"], c["target"]) == (mode, what)]
        held = sum(c["met"] for c in cells)
        goal = cells[0]["goal_ms"] if cells else None
        lines.append(f"- {mode}, {what}: p99 ≤ {goal:g} ms in {held} of {len(cells)} runs"
                     + (" (the target holds)" if cells and held == len(cells) else ""))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--modes", default="segment,commitlog")
    ap.add_argument("--results-dir", type=Path, default=Path(__file__).resolve().parent / "results")
    ns = ap.parse_args(argv)
    r = run(ns.runs, ns.modes.split(","))
    ns.results_dir.mkdir(parents=True, exist_ok=True)
    (ns.results_dir / "latency-runs.json").write_text(json.dumps(r, indent=1))
    text = markdown(r)
    (ns.results_dir / "latency-runs.md").write_text(text)
    print("\n" + text)
    return 1 if any(c["error"] for run in r["runs"] for c in run["cells"]) else 0


if __name__ == "__main__":
    sys.exit(main())
