"""Live layout moves (AlterReplicaLogDirs): how fast a partition moves between the two layouts,
and what a steady acks=all producer sees while it does, against a real broker over the network.

Per direction (segment -> commitlog, commitlog -> segment), one fresh broker
(broker_launcher.py, unpinned: the broker and the clients share the machine's cores) whose
storage.mode is the source layout:

1. topic `moved` (1 partition) is filled at full speed with --mb of 1 KB records (acks=1);
2. produce latency before the move: a producer held at --rate records/s of 1 KB values
   (acks=all, librdkafka's per-record send-to-ack latency, latency_workers.paced_produce_worker)
   writes topic `latency` for --seconds;
3. the same latency run again, and once its producer's first records are in, AlterReplicaLogDirs
   names the other layout's log dir for `moved`-0; the report says how much of the latency
   window the move overlapped;
4. migration speed = the partition's size (DescribeLogDirs) / the move's time, from the broker's
   "moving" and "moved" log lines (the future log made, the swap done).

Ceilings measured in the same run, before each direction: dd sequential write with fdatasync
(machine_facts.disk_write_rate) and write() into the page cache (machine_ceilings).

    .venv/bin/python bench/layout_move.py [--mb 1024] [--rate 2000] [--seconds 20]
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

from broker_launcher import BrokerProcess, broker_command, free_port
from compaction import fill, latency
from load_workers import PhaseError
from machine_ceilings import page_cache_write_rate
from machine_facts import disk_write_rate, machine_facts
from topic_admin import create_topic, held_records

BENCH = Path(__file__).resolve().parent
HOST = "127.0.0.1"
NODE = 1  # a lone broker's id
STAMP = r"^(\S+ \S+) INFO \S+: "
STARTED = re.compile(STAMP + r"moving moved-0 from the \w+ to the \w+ layout", re.MULTILINE)
SWAPPED = re.compile(STAMP + r"moved moved-0 to the \w+ layout at offset (\d+)", re.MULTILINE)


def other(layout: str) -> str:
    return "commitlog" if layout == "segment" else "segment"


def log_dir(data: Path, layout: str) -> str:
    return str(data.resolve() / "commitlog-store" if layout == "commitlog" else data.resolve())


def admin(broker: BrokerProcess):
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=broker.bootstrap)


def partition_bytes(broker: BrokerProcess) -> dict[tuple[str, bool], int]:
    """(log dir, is_future) -> size of `moved`-0, as DescribeLogDirs lists it."""
    client = admin(broker)
    try:
        (answer,) = client.describe_log_dirs({"moved": [0]})
    finally:
        client.close()
    return {(d["log_dir"], p["is_future_key"]): p["partition_size"]
            for d in answer["log_dirs"] for t in d["topics"] for p in t["partitions"]}


def start_move(broker: BrokerProcess, path: str) -> None:
    """Kafka's Admin call (alterReplicaLogDirs): it answers once the move has started."""
    client = admin(broker)
    try:
        (error,) = client.alter_replica_log_dirs({("moved", 0, NODE): path}).values()
    finally:
        client.close()
    if error.errno != 0:
        raise PhaseError(f"AlterReplicaLogDirs answered {error.__name__}")


def stamp(text: str) -> float:
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def wait_for_swap(broker: BrokerProcess, limit_s: float = 1800.0) -> tuple[float, float]:
    """The move's start and swap, as the broker logged them."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        broker.check_alive()
        text = broker.log_path.read_text(errors="replace")
        started, swapped = STARTED.search(text), SWAPPED.search(text)
        if started and swapped:
            return stamp(started.group(1)), stamp(swapped.group(1))
        time.sleep(0.2)
    raise PhaseError("the move did not finish within the limit")


def latency_with_move(broker: BrokerProcess, ns: argparse.Namespace, target_dir: str) -> dict:
    """The latency run, with the move asked for once its producer's first records are in: a
    fast move (commitlog -> segment takes seconds) would otherwise be over before the latency
    workers had started."""
    result: dict = {}
    held = held_records(broker.bootstrap, "latency", 1)
    run = threading.Thread(target=lambda: result.update(latency(broker, ns.rate, ns.seconds, acks="all")))
    run.start()
    deadline = time.monotonic() + 120
    while held_records(broker.bootstrap, "latency", 1) == held:
        if not run.is_alive() or time.monotonic() > deadline:
            raise PhaseError("the latency producer wrote nothing")
        time.sleep(0.2)
    start_move(broker, target_dir)
    run.join()
    if not result:
        raise PhaseError("the latency run during the move failed (see above)")
    return result


def run_direction(source: str, ns: argparse.Namespace, work: Path) -> dict:
    data = work / source
    data.mkdir()
    ceilings = {"dd_mb_s": disk_write_rate(data, 1024, 300)["mb_s"],
                "page_cache_mb_s": page_cache_write_rate(str(data), 1024, None)["mb_s"]}
    port = free_port()
    args = ["--storage-mode", source, "--log-level", "INFO"]
    broker = BrokerProcess(broker_command("twinlog", None, args, data, HOST, port), HOST, port,
                           work / f"broker-{source}.log")
    broker.start()
    try:
        create_topic(broker.bootstrap, "moved", 1, {"retention.ms": "-1"})
        create_topic(broker.bootstrap, "latency", 1)
        filled = fill(broker.bootstrap, "moved", ns.mb, ns.mb * 1000)
        size = sum(partition_bytes(broker).values())
        before = latency(broker, ns.rate, ns.seconds, acks="all")
        target = other(source)
        during = latency_with_move(broker, ns, log_dir(data, target))
        began, swapped = wait_for_swap(broker)
        if set(partition_bytes(broker)) != {(log_dir(data, target), False)}:
            raise PhaseError(f"after the swap DescribeLogDirs shows {partition_bytes(broker)}")
        w0, w1 = during["window"]
        overlap = max(0.0, min(w1, swapped) - max(w0, began)) / (w1 - w0)
        return {"from": source, "to": target, "ceilings": ceilings, "fill": filled, "mb": size / 1e6,
                "move_seconds": swapped - began, "mb_s": size / 1e6 / (swapped - began),
                "before": before, "during": during, "overlap": overlap}
    finally:
        broker.stop()


def report(r: dict) -> str:
    lat = "  ".join(f"{name}: p50 {x['p50_ms']:.1f} p99 {x['p99_ms']:.1f} max {x['max_ms']:.1f} ms "
                    f"({x['rate_achieved']:.0f}/s, broker CPU {x['broker_cpu']:.2f})"
                    for name, x in (("before", r["before"]), ("moving", r["during"])))
    return (f"{r['from']:9} -> {r['to']:9} dd {r['ceilings']['dd_mb_s']:.0f} MB/s, page cache "
            f"{r['ceilings']['page_cache_mb_s']:.0f} MB/s | {r['mb']:.0f} MB moved in {r['move_seconds']:.1f} s: "
            f"{r['mb_s']:.1f} MB/s | acks=all {lat} | the move covered {r['overlap']:.0%} of the latency window")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="MB of 1 KB records in the moved partition")
    parser.add_argument("--rate", type=int, default=2000, help="records/s of the latency producer")
    parser.add_argument("--seconds", type=float, default=20.0, help="each latency run")
    parser.add_argument("--from-layouts", default="segment,commitlog", help="the source layouts, in order")
    ns = parser.parse_args()
    (BENCH / "results" / "tmp").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="layout-move-", dir=BENCH / "results" / "tmp"))
    results = {"machine": machine_facts(), "settings": vars(ns), "moves": []}
    try:
        for source in ns.from_layouts.split(","):
            results["moves"].append(run_direction(source, ns, work))
            print(report(results["moves"][-1]), flush=True)
    finally:
        out = BENCH / "results" / "layout_move.json"
        out.write_text(json.dumps(results, indent=1, default=str))
        shutil.rmtree(work, ignore_errors=True)
    print(f"results in {out}")


if __name__ == "__main__":
    main()
