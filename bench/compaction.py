"""Compaction (issue 15): the log cleaner's throughput per layout, and produce latency with and
without the cleaner running, against a real broker over the network.

Per layout, one fresh broker (broker_launcher.py, unpinned: the broker and the clients share
the machine's cores) with a 200 ms cleaner backoff:

1. a topic `compacted` (1 partition, 16 MiB segments) is created with cleanup.policy=delete and
   filled at full speed with --mb of keyed 1 KB records over --keys keys (confluent-kafka,
   acks=1), so nothing is cleaned while it fills;
2. produce latency, cleaner idle: a producer held at --rate records/s of 1 KB values (acks=1,
   librdkafka's per-record send-to-ack latency, latency_workers.paced_produce_worker) writes
   topic `latency` for --seconds;
3. `compacted` is switched to cleanup.policy=compact (IncrementalAlterConfigs, dirty ratio 0)
   and the same latency run starts at once, while the cleaner cleans the whole log; the report
   says how much of the latency window the cleaning overlapped (from the round's log line);
4. once no round has run for 3 s: throughput = the partition's size before cleaning (as
   DescribeLogDirs reports it) / the rounds' own time, with the MB read as the broker logs it,
   and the cleaner thread's CPU time over the rounds' time (from the round's log line); the
   latency runs carry the whole broker's CPU.

Ceilings measured in the same run, before each layout: dd sequential write with fdatasync
(machine_facts.disk_write_rate) and write() into the page cache (machine_ceilings).

    .venv/bin/python bench/compaction.py [--mb 1024] [--keys 100000] [--rate 2000] [--seconds 15]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from broker_launcher import BrokerProcess, broker_command, free_port
from compare_cells import SAMPLES_PER_S, percentiles
from latency_workers import paced_produce_worker
from load_workers import PhaseError, run_phase
from machine_ceilings import page_cache_write_rate
from machine_facts import disk_write_rate, machine_facts
from topic_admin import check_acknowledged, create_topic, held_records

BENCH = Path(__file__).resolve().parent
HOST = "127.0.0.1"
RECORD = 1024
ROUND = re.compile(r"^(\S+ \S+) INFO \S+: cleaned compacted-0 up to offset (\d+): ([\d.]+) MB read, "
                   r"([\d.]+) MB written, (\d+) records dropped, \d+ groups swapped in ([\d.]+) s "
                   r"\([\d.]+ MB/s, ([\d.]+) s of this thread's CPU\)", re.MULTILINE)


def fill(bootstrap: str, topic: str, total_mb: int, keys: int) -> dict:
    """Keyed records of RECORD bytes, as fast as one producer sends them; all acknowledged."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5, "batch.size": 1 << 20,
                         "queue.buffering.max.kbytes": 1 << 20, "compression.type": "none"})
    failed = []
    value = os.urandom(RECORD - 16)
    count = total_mb * 1_000_000 // RECORD
    t0 = time.monotonic()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value, b"key-%011d" % (i % keys), partition=0,
                                 on_delivery=lambda err, _m: err is not None and failed.append(str(err)))
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    if left or failed:
        raise PhaseError(f"fill: {left} unacknowledged, {len(failed)} failed: {failed[:3]}")
    return {"records": count, "seconds": time.monotonic() - t0}


def latency(broker: BrokerProcess, rate: int, seconds: float, acks: int | str = 1) -> dict:
    before = held_records(broker.bootstrap, "latency", 1)
    params = [{"bootstrap": broker.bootstrap, "topic": "latency", "value_size": RECORD, "linger_ms": 1,
               "batch_bytes": 1 << 20, "rate": rate, "seconds": seconds, "acks": acks,
               "sample_every": max(1, int(rate / SAMPLES_PER_S)), "flush_timeout": 60, "partitions": 1,
               "cpus": None, "partition": 0, "client_config": {"max.in.flight.requests.per.connection": 5}}]
    wall0 = time.time()
    run = run_phase(paced_produce_worker, params, seconds + 150, broker)
    (res,) = run.results
    check_acknowledged(res, held_records(broker.bootstrap, "latency", 1) - before)
    secs = res["send_seconds"]
    return {"rate_achieved": res["sent"] / secs, "samples": len(res["latencies_s"]), **percentiles(res["latencies_s"]),
            "broker_cpu": run.broker_cpu_s / secs, "window": (wall0, wall0 + secs)}


def switch_to_compact(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.TOPIC, "compacted", incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)])
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held: its futures die with it
    for f in admin.incremental_alter_configs([resource]).values():
        f.result(timeout=30)


def rounds(log_text: str) -> list[dict]:
    out = []
    for stamp, end, read, written, dropped, secs, cpu in ROUND.findall(log_text):
        finished = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
        out.append({"end_offset": int(end), "mb_read": float(read), "mb_written": float(written),
                    "dropped": int(dropped), "seconds": float(secs), "cpu_s": float(cpu), "start": finished - float(secs),
                    "finish": finished})
    return out


def wait_for_quiet_cleaner(broker: BrokerProcess, quiet_s: float = 3.0, limit_s: float = 1800.0) -> list[dict]:
    deadline = time.monotonic() + limit_s
    seen, since = None, time.monotonic()
    while time.monotonic() < deadline:
        broker.check_alive()
        now = rounds(broker.log_path.read_text(errors="replace"))
        if now != seen:
            seen, since = now, time.monotonic()
        elif now and time.monotonic() - since >= quiet_s:
            return now
        time.sleep(0.2)
    raise PhaseError("the cleaner did not finish within the limit")


def partition_bytes(bootstrap: str) -> int:
    """The compacted partition's size as the broker reports it (DescribeLogDirs): the bytes of
    its batches, in either layout (the commitlog's files are preallocated, so no du would do)."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        (broker,) = admin.describe_log_dirs({"compacted": [0]})
        return sum(p["partition_size"] for d in broker["log_dirs"] for t in d["topics"] for p in t["partitions"])
    finally:
        admin.close()


def run_layout(layout: str, ns: argparse.Namespace, work: Path) -> dict:
    data = work / layout
    data.mkdir()
    ceilings = {"dd_mb_s": disk_write_rate(data, 1024, 300)["mb_s"],
                "page_cache_mb_s": page_cache_write_rate(str(data), 1024, None)["mb_s"]}
    port = free_port()
    args = ["--storage-mode", layout, "--log-cleaner-backoff-ms", "200", "--log-level", "INFO"]
    broker = BrokerProcess(broker_command("twinlog", None, args, data, HOST, port), HOST, port,
                           work / f"broker-{layout}.log")
    broker.start()
    try:
        create_topic(broker.bootstrap, "compacted", 1, {"cleanup.policy": "delete", "retention.ms": "-1",
                                                         "segment.bytes": str(16 << 20),
                                                         "min.cleanable.dirty.ratio": "0"})
        create_topic(broker.bootstrap, "latency", 1)
        filled = fill(broker.bootstrap, "compacted", ns.mb, ns.keys)
        idle = latency(broker, ns.rate, ns.seconds)
        log_bytes = partition_bytes(broker.bootstrap)
        switch_to_compact(broker.bootstrap)
        busy = latency(broker, ns.rate, ns.seconds)
        done = wait_for_quiet_cleaner(broker)
        clean_s = sum(r["seconds"] for r in done)
        w0, w1 = busy["window"]
        overlap = max(0.0, min(w1, done[-1]["finish"]) - max(w0, done[0]["start"])) / (w1 - w0)
        return {"layout": layout, "ceilings": ceilings, "fill": filled, "log_mb_before": log_bytes / 1e6,
                "log_mb_after": partition_bytes(broker.bootstrap) / 1e6, "rounds": done,
                "clean_seconds": clean_s,
                "log_mb_s": log_bytes / 1e6 / clean_s, "read_mb_s": sum(r["mb_read"] for r in done) / clean_s,
                "cleaner_cpu": sum(r["cpu_s"] for r in done) / clean_s, "idle": idle, "busy": busy, "overlap": overlap}
    finally:
        broker.stop()


def report(r: dict) -> str:
    lat = "  ".join(f"{name}: p50 {x['p50_ms']:.1f} p99 {x['p99_ms']:.1f} max {x['max_ms']:.1f} ms "
                    f"({x['rate_achieved']:.0f}/s, broker CPU {x['broker_cpu']:.2f})"
                    for name, x in (("cleaner idle", r["idle"]), ("cleaning", r["busy"])))
    return (f"{r['layout']:9} dd {r['ceilings']['dd_mb_s']:.0f} MB/s, page cache {r['ceilings']['page_cache_mb_s']:.0f} "
            f"MB/s | log {r['log_mb_before']:.0f} -> {r['log_mb_after']:.0f} MB in {len(r['rounds'])} rounds, "
            f"{r['clean_seconds']:.1f} s: {r['log_mb_s']:.1f} MB/s of log ({r['read_mb_s']:.1f} MB/s read), "
            f"cleaner thread CPU {r['cleaner_cpu']:.2f} cores | {lat} | cleaning covered "
            f"{r['overlap']:.0%} of the latency window")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="MB of keyed 1 KB records to clean")
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--rate", type=int, default=2000, help="records/s of the latency producer")
    parser.add_argument("--seconds", type=float, default=15.0, help="each latency run")
    parser.add_argument("--layouts", default="segment,commitlog")
    ns = parser.parse_args()
    (BENCH / "results" / "tmp").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="compaction-", dir=BENCH / "results" / "tmp"))
    results = {"machine": machine_facts(), "settings": vars(ns), "layouts": []}
    try:
        for layout in ns.layouts.split(","):
            results["layouts"].append(run_layout(layout, ns, work))
            print(report(results["layouts"][-1]), flush=True)
    finally:
        out = BENCH / "results" / "compaction.json"
        out.write_text(json.dumps(results, indent=1, default=str))
        shutil.rmtree(work, ignore_errors=True)
    print(f"results in {out}")


if __name__ == "__main__":
    main()
