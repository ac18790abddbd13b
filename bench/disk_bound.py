"""Disk IOs per record for the two layouts, and what they make of a disk with an IOPS budget.

    .venv/bin/python bench/disk_bound.py [--partitions 1,100,1000,10000] [--records 20000]
        [--iops 3000] [--passes count,strace,throttled] [--results-dir DIR]

On this VM both layouts are CPU-bound, so their msg/s says nothing about a disk that is the
limit. What does carry over is how many IOs each layout asks of the disk per record. Each cell
({segment, commitlog} × partitions × {flush left to the page cache, flush.messages=1}) gets a
fresh broker whose data dir is on a loop device of its own (bench/loop_disk.py), one topic,
and a fixed number of 1 KB records (null keys, acks=all, spread at random over the partitions)
from one confluent-kafka producer process. Three passes per cell:

- **count:** /proc/diskstats of the loop device from just before the first record to after a
  syncfs that follows the last ack. The syncfs puts on the disk what the page cache still held,
  so both flush settings are charged for all the IO their records need, not just what happened
  to be written back during the phase. Topic creation is synced before the first snapshot, and
  the warm-up record (one) falls inside it.
- **syscalls:** a shorter run under `strace -c -f` (it slows the broker several-fold, so it
  gives counts only): fsync / fdatasync and the file-writing calls per 1,000 records.
- **throttled:** the same cell with the device's writes capped at `--iops` (loop_disk's cgroup
  v1 blkio throttle), msg/s = acknowledged records / (produce time + the closing syncfs).

A pass stops at its record count or its time cap, whichever comes first; per-record figures
divide by the records actually acknowledged, and the report shows that number per cell.
disk_bound_report.py projects the counts onto 200 and 3,000 IOPS, writes the table and the plot.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from broker_launcher import BrokerProcess, broker_command, free_port  # noqa: E402
from disk_bound_report import write_report  # noqa: E402
from load_workers import produce_worker, run_phase  # noqa: E402
from loop_disk import LoopDisk, cgroup_version  # noqa: E402
from machine_facts import filesystem_of, machine_facts  # noqa: E402
from topic_admin import check_acknowledged, create_topic, held_records  # noqa: E402

BENCH = Path(__file__).resolve().parent
# The calls that put record bytes into files or make them durable; socket sends are sendto/sendmsg
# under asyncio's default loop. `write` also carries the log's own lines (WARNING level: few).
FILE_SYSCALLS = ("fsync", "fdatasync", "write", "writev", "pwrite64", "pwritev", "pwritev2", "msync")

# The producer's queue is kept short so the time cap bounds a pass: with librdkafka's usual
# 1 GiB queue every record is queued at once and a slow cell drains them long after the cap.
# Five requests in flight (the Java client's default): librdkafka's default of 1,000,000 let
# 128 requests wait behind a flush.messages=1 broker until the socket timed out.
QUEUE_KBYTES = 2048


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", default="1,100,1000,10000")
    ap.add_argument("--modes", default="segment,commitlog")
    ap.add_argument("--flush", default="default,1", help="'default' (page cache) and/or '1' (flush.messages=1)")
    ap.add_argument("--records", type=int, default=20_000, help="records per cell (count and throttled passes)")
    ap.add_argument("--seconds", type=float, default=30.0, help="time cap of a count or throttled pass")
    ap.add_argument("--strace-records", type=int, default=4_000)
    ap.add_argument("--strace-seconds", type=float, default=15.0)
    ap.add_argument("--value-size", type=int, default=1024)
    ap.add_argument("--iops", type=int, default=3000, help="write IOPS cap of the throttled pass; 0: skip it")
    ap.add_argument("--passes", default="count,strace,throttled")
    ap.add_argument("--disk-gib", type=int, default=16)
    ap.add_argument("--results-dir", type=Path, default=BENCH / "results")
    ap.add_argument("--work-dir", type=Path, default=BENCH / "results" / "tmp" / "disk-bound",
                    help="where the disk image and its mount point go (one per concurrent run)")
    return ap.parse_args(argv)


def strace_counts(path: Path) -> dict[str, int]:
    """Calls per syscall from `strace -c`'s table (`% time seconds usecs/call calls [errors] name`)."""
    counts = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) in (5, 6) and parts[3].isdigit() and parts[-1] != "total":
            counts[parts[-1]] = int(parts[3])
    return counts


class Strace:
    """`strace -c -f` attached to a running process (all its threads) until stop()."""

    def __init__(self, pid: int, out: Path):
        self.out = out
        self.proc = subprocess.Popen(["strace", "-c", "-f", "-q", "-o", str(out), "-e",
                                      "trace=" + ",".join(FILE_SYSCALLS), "-p", str(pid)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.0)  # attaching to every thread takes a moment; records before it are not sent yet

    def stop(self) -> dict[str, int]:
        self.proc.send_signal(signal.SIGINT)  # detach and print the summary
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        return strace_counts(self.out)


def warm_up(bootstrap: str, topic: str) -> None:
    """One acknowledged record before the counters start. The producer worker's own warm-up
    allows 30 s, and a commitlog broker had not answered one within that after creating 10,000
    partitions with flush.messages=1; that wait is set-up, not the cell."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 300_000})
    producer.produce(topic, b"warm-up", partition=0)
    if producer.flush(300):
        raise RuntimeError("the warm-up record was not acknowledged in 300 s")


def run_pass(disk: LoopDisk, args, mode: str, partitions: int, flush: str, records: int, seconds: float,
             split, traced: bool) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"{mode}-{partitions}-", dir=disk.mount_point))
    port = free_port()
    cmd = broker_command("twinlog", None, ["--storage-mode", mode], work / "data", "127.0.0.1", port)
    broker = BrokerProcess(cmd, "127.0.0.1", port, args.work_dir / "broker.log", split[0])
    broker.start(timeout=60)
    tracer = None
    try:
        topic = f"disk-{partitions}"
        create_topic(broker.bootstrap, topic, partitions, {"flush.messages": "1"} if flush == "1" else None,
                      timeout_s=300)
        params = [{"bootstrap": broker.bootstrap, "topic": topic, "value_size": args.value_size,
                   "linger_ms": 5, "batch_bytes": 1 << 20, "queue_kbytes": QUEUE_KBYTES,
                   "count": records, "seconds": seconds, "check_every": 1000,
                   "flush_timeout": 300, "partition": None,
                   "client_config": {"acks": "all", "sticky.partitioning.linger.ms": 0,
                                     "partitioner": "random", "request.timeout.ms": 120_000,
                                     "message.timeout.ms": 600_000, "socket.timeout.ms": 300_000,
                                     "max.in.flight.requests.per.connection": 5},
                   "cpus": sorted(split[1]) if split[1] else None}]
        warm_up(broker.bootstrap, topic)
        disk.sync()
        before = disk.counters()
        if traced:
            tracer = Strace(broker.proc.pid, args.work_dir / "strace.txt")
        run = run_phase(produce_worker, params, seconds + 400, broker)
        syscalls = tracer.stop() if tracer else None
        tracer = None
        t0 = time.monotonic()
        disk.sync()
        sync_s = time.monotonic() - t0
        io = disk.counters() - before
        (res,) = run.results
        check_acknowledged(res, held_records(broker.bootstrap, topic, partitions))
        produce_s = run.end_time - run.go_time
        return {"records": res["acked"] + res["warmup_acked"], "produce_s": produce_s, "sync_s": sync_s,
                "msgs_s": res["acked"] / (produce_s + sync_s),
                "broker_cpu": run.broker_cpu_s / produce_s if run.broker_cpu_s is not None else None,
                "writes": io.writes, "write_mb": io.write_sectors * 512 / 1e6, "flushes": io.flushes,
                "syscalls": syscalls, "avg_batch_records": res["avg_batch_records"]}
    finally:
        if tracer:
            tracer.stop()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
        disk.sync()


def one_cell(disk: LoopDisk, args, mode: str, partitions: int, flush: str, split) -> dict:
    cell = {"mode": mode, "partitions": partitions, "flush": flush}
    passes = [("count", args.records, args.seconds, False, 0),
              ("strace", args.strace_records, args.strace_seconds, True, 0),
              ("throttled", args.records, args.seconds, False, args.iops)]
    chosen = args.passes.split(",")
    for name, records, seconds, traced, iops in passes:
        if name not in chosen or (name == "throttled" and not iops):
            continue
        try:
            if iops:
                disk.set_write_iops(iops)
            cell[name] = run_pass(disk, args, mode, partitions, flush, records, seconds, split, traced)
        except Exception as e:  # noqa: BLE001 - one failed pass is reported, the run goes on
            cell[name] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        finally:
            if iops:
                disk.set_write_iops(0)
        print(f"  {name}: {_summary(cell[name])}", flush=True)
    return cell


def _summary(p: dict) -> str:
    if "error" in p:
        return "FAILED " + p["error"]
    per_k = 1000 / p["records"]
    text = (f"{p['records']:,} records, {p['msgs_s']:,.0f} msg/s (sync {p['sync_s']:.1f} s), "
            f"{p['writes'] * per_k:.1f} writes + {p['flushes'] * per_k:.1f} flushes per 1,000")
    if p.get("syscalls") is not None:
        s = p["syscalls"]
        text += f"; fsync+fdatasync {(s.get('fsync', 0) + s.get('fdatasync', 0)) * per_k:.1f} per 1,000"
    return text


def main(argv=None) -> int:
    args = parse_args(argv)
    # A stop by SIGTERM unwinds like Ctrl-C, so the device is unmounted, detached and uncapped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    tmp = BENCH / "results" / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    cpus = sorted(os.sched_getaffinity(0))
    split = ({cpus[0]}, set(cpus[1:])) if len(cpus) >= 2 else (None, None)
    if split[1]:
        os.sched_setaffinity(0, split[1])
    cells = []
    with LoopDisk(args.work_dir / "disk.img", args.disk_gib) as disk:
        facts = {**machine_facts(), "cgroup": cgroup_version(), "device": disk.device,
                 "backing": f"{disk.image} on {filesystem_of(disk.image.parent)}, loop --direct-io=on, ext4",
                 "load_before": os.getloadavg()}
        if args.iops:
            try:  # find out once whether the cap takes, before any cell relies on it
                disk.set_write_iops(args.iops)
                facts["iops_limit"] = f"blkio.throttle.write_iops_device {disk.major_minor} {disk.write_iops_limit()}"
                disk.set_write_iops(0)
            except (OSError, RuntimeError) as e:
                facts["iops_limit"] = f"unavailable: {e}"
                args.iops = 0
        for flush in args.flush.split(","):
            for mode in args.modes.split(","):
                for n in (int(x) for x in args.partitions.split(",")):
                    print(f"[{mode}, {n} partitions, flush {flush}]", flush=True)
                    cells.append(one_cell(disk, args, mode, n, flush, split))
        facts["load_after"] = os.getloadavg()
    args.results_dir.mkdir(parents=True, exist_ok=True)
    settings = {k: str(v) for k, v in vars(args).items()}
    (args.results_dir / "disk_bound.json").write_text(json.dumps(
        {"cells": cells, "machine": facts, "settings": settings}, indent=1))
    md = write_report(cells, facts, settings, args.results_dir)
    print("\n" + md)
    return 1 if any("error" in c.get(p, {}) for c in cells for p in ("count", "strace", "throttled")) else 0


if __name__ == "__main__":
    sys.exit(main())
