"""Broker start-up with a big `__consumer_offsets`, with and without its compaction (issue 15).

For each layout, twice (log cleaner off = before, on = after): a fresh broker takes
COMMITS offset commits (GROUPS groups x PARTITIONS partitions of one topic x rounds, pipelined
simple OffsetCommits, compat_tests/helpers/offset_commits.py) into `__consumer_offsets` (50
partitions, segments of --segment-bytes); with the cleaner on, the run waits until no round
has run for 3 s. Then the broker is stopped (SIGTERM) and started again, and the figure is the
time from the start to the first OffsetFetch answered with the committed offsets (the load
runs before the broker answers group requests), with the replayed record count from the
broker's load line and the cleaner's throughput from its round lines.

    .venv/bin/python -m bench.offsets_startup [--commits 1000000] [--segment-bytes 262144]
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.offset_commits import commit_offsets, fetch_committed
from compat_tests.helpers.raw_kafka import Client

PARTITIONS = 10
LOADED = re.compile(r"loaded (\d+) groups from (\d+) __consumer_offsets records")
CLEANED = re.compile(r"cleaned __consumer_offsets-\d+ up to offset \d+: ([\d.]+) MB read.* in ([\d.]+) s")


def run(layout: str, cleaner: bool, groups: list[str], rounds: int, segment_bytes: int) -> dict:
    args = ["--offsets-topic-segment-bytes", str(segment_bytes), "--log-cleaner-backoff-ms", "200",
            "--group-initial-rebalance-delay-ms", "0", "--log-cleaner-enable" if cleaner else "--no-log-cleaner-enable"]
    with tempfile.TemporaryDirectory(prefix="offsets-startup-") as work:
        proc = BrokerProcess(storage_mode=layout, extra_args=args, workdir=Path(work))
        try:
            proc.start()
            with Client.to(proc, timeout=120) as client:
                client.create_topic("committed", PARTITIONS)
                t0 = time.monotonic()
                committed = commit_offsets(client, "committed", PARTITIONS, groups, rounds)
                commit_s = time.monotonic() - t0
            if cleaner:
                _wait_for_quiet_cleaner(proc)
            rounds_text = proc.log_text()
            proc.stop()
            since = proc.log_size()
            t0 = time.monotonic()
            proc.start(timeout=600)
            with Client.to(proc, timeout=600) as client:
                probe = groups[-1]
                while fetch_committed(client, "committed", PARTITIONS, [probe]) != {
                        k: v for k, v in committed.items() if k[0] == probe}:
                    time.sleep(0.01)
                startup_s = time.monotonic() - t0
                assert fetch_committed(client, "committed", PARTITIONS, groups) == committed
            replayed = sum(int(m[1]) for m in LOADED.findall(proc.log_text(since)))
            cleaned = [(float(mb), float(s)) for mb, s in CLEANED.findall(rounds_text)]
            mb = sum(m for m, _ in cleaned)
            secs = sum(s for _, s in cleaned)
            return {"layout": layout, "cleaner": cleaner, "commits": len(committed) * rounds,
                    "commit_s": commit_s, "startup_s": startup_s, "replayed": replayed,
                    "rounds": len(cleaned), "clean_mb": mb, "clean_mb_s": mb / secs if secs else None,
                    "round_mb_s_median": statistics.median(m / s for m, s in cleaned if s) if cleaned else None}
        finally:
            proc.cleanup()


def _wait_for_quiet_cleaner(proc: BrokerProcess, quiet_s: float = 3.0, limit_s: float = 600.0) -> None:
    deadline = time.monotonic() + limit_s
    seen, since_change = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = proc.log_text().count("cleaned __consumer_offsets")
        if count != seen:
            seen, since_change = count, time.monotonic()
        elif time.monotonic() - since_change >= quiet_s:
            return
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--segment-bytes", type=int, default=256 * 1024)
    parser.add_argument("--layouts", default="segment,commitlog")
    ns = parser.parse_args()
    groups = [f"group-{i}" for i in range(ns.groups)]
    rounds = max(1, ns.commits // (ns.groups * PARTITIONS))
    for layout in ns.layouts.split(","):
        for cleaner in (False, True):
            r = run(layout, cleaner, groups, rounds, ns.segment_bytes)
            print(f"{r['layout']:9} cleaner={'on ' if cleaner else 'off'} commits={r['commits']:,} "
                  f"(committed in {r['commit_s']:.1f} s) start-up {r['startup_s']:.2f} s, "
                  f"replayed {r['replayed']:,} records; cleaner: {r['rounds']} rounds, {r['clean_mb']:.1f} MB"
                  + (f", {r['clean_mb_s']:.1f} MB/s overall, median round {r['round_mb_s_median']:.1f} MB/s"
                     if r["clean_mb_s"] else ""), flush=True)


if __name__ == "__main__":
    main()
