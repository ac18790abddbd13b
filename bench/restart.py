"""Restart time against the data a broker holds, both layouts, after a clean stop and after kill -9.

For each layout and each size: a broker creates a topic of PARTITIONS partitions and stops;
the topic is then filled in this process, through the broker's own storage engine opened as
the broker opens it, with one-record idempotent batches (a producer per partition, sequences
counting up), as fast as the engine appends (a network fill of millions of one-record batches
would take the run's hours). Then the broker is started four times, and each figure is the
time from the process start until every partition has acknowledged a produce:

- first:  no producer-state snapshot exists yet (the fill wrote none): the whole log is replayed,
          what every restart cost before snapshots;
- clean:  after a SIGTERM (the shutdown writes each partition's snapshot);
- kill9:  after TAIL one-record batches produced over the network and a SIGKILL at once: the
          replay covers what arrived since the last snapshot round (every 10 s);
- each with the batch headers the producer-state load replayed, from the broker's log lines.

    .venv/bin/python -m bench.restart [--sizes 50000,500000,5000000] [--layouts segment,commitlog]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path

from broker.settings.config_from_settings import config_with
from broker.settings.topic_configs import log_config_for
from broker.storage.modes import StorageModes
from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.raw_kafka import Client
from wire.batch_builder import build_batch

PARTITIONS = 32
TAIL = 3200
TOPIC = "held"
REPLAYED = re.compile(r"producer state from the snapshot at -?\d+ and (\d+) batch headers past it")
RESULTS = Path(__file__).parent / "results" / "restart.json"


def fill(data_dir: Path, layout: str, batches: int) -> None:
    """Append `batches` one-record idempotent batches over the partitions, in this process."""
    config = config_with(data_dir=str(data_dir), storage_mode=layout)
    storage = StorageModes(data_dir, layout, dict(
        commitlog_file_size=config.commitlog_file_bytes, index_slots=config.index_hash_slots,
        index_entries=config.index_max_entries))
    store = storage.store(layout)
    cfg = log_config_for(config.log_defaults, {})
    logs = [store.open_partition(TOPIC, p, cfg) for p in range(PARTITIONS)]
    now = int(time.time() * 1000)
    for i in range(batches):
        p = i % PARTITIONS
        batch = build_batch([(b"key-%d" % i, b"x" * 40)], now, (1000 + p, 0, i // PARTITIONS))
        logs[p].append(batch, 0, now)
        if p == PARTITIONS - 1:
            store.commit_writes()
    storage.close()


def restart_s(proc: BrokerProcess) -> float:
    """Start the broker; seconds until every partition acknowledged a produce."""
    batch = bytes(build_batch([(b"probe", b"v")], int(time.time() * 1000)))
    t0 = time.monotonic()
    proc.start(timeout=3600)
    with Client.to(proc, timeout=600) as client:
        for p in range(PARTITIONS):
            while client.produce(TOPIC, p, batch, acks=1).error_code != 0:
                time.sleep(0.01)
    return time.monotonic() - t0


def replayed(proc: BrokerProcess, since: int) -> int:
    return sum(int(n) for n in REPLAYED.findall(proc.log_text(since)))


def run(layout: str, batches: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="restart-", dir=Path.cwd()) as work:
        proc = BrokerProcess(storage_mode=layout, workdir=Path(work))
        try:
            proc.start()
            with Client.to(proc, timeout=60) as client:
                client.create_topic(TOPIC, PARTITIONS)
            proc.stop()
            t0 = time.monotonic()
            fill(proc.data_dir, layout, batches)
            out = {"layout": layout, "batches": batches, "fill_s": time.monotonic() - t0}
            for case in ("first", "clean", "kill9"):
                since = proc.log_size()
                out[f"{case}_s"] = restart_s(proc)
                out[f"{case}_replayed"] = replayed(proc, since)
                if case == "clean":
                    with Client.to(proc, timeout=60) as client:
                        for i in range(TAIL):
                            client.produce(TOPIC, i % PARTITIONS, bytes(build_batch(
                                [(b"tail", b"v")], int(time.time() * 1000), (5000 + i % PARTITIONS, 0, i // PARTITIONS))),
                                acks=1)
                    proc.kill()
                elif case != "kill9":
                    proc.stop(timeout=600)
            proc.stop(timeout=600)
            return out
        finally:
            proc.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50000,500000,5000000")
    parser.add_argument("--layouts", default="segment,commitlog")
    ns = parser.parse_args()
    results = []
    for layout in ns.layouts.split(","):
        for size in (int(s) for s in ns.sizes.split(",")):
            r = run(layout, size)
            results.append(r)
            print(f"{layout:9} {size:>9,} batches (filled in {r['fill_s']:.0f} s): "
                  f"first {r['first_s']:.2f} s ({r['first_replayed']:,} replayed), "
                  f"clean {r['clean_s']:.2f} s ({r['clean_replayed']:,}), "
                  f"kill -9 {r['kill9_s']:.2f} s ({r['kill9_replayed']:,})", flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
