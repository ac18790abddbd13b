"""What holding many partitions costs one broker, both layouts (issue 38's breadth targets).

    .venv/bin/python bench/partition_breadth.py [--partitions 50000] [--topics 50]
        [--modes segment,commitlog] [--idle-seconds 30] [--results-dir DIR]

For each layout a fresh broker (flush left to the page cache, WARNING logs), on an ext4 made
for it on a loop device (as root; `--work-dir` puts the data elsewhere), gets `--topics`
topics of partitions/topics partitions each, created in CreateTopics requests of up to 10,000
partitions (Kafka's limit per request), and then:

- **create:** from the first request until metadata shows a leader for every partition;
- **idle CPU:** the broker's user + system CPU time (/proc/PID/stat, every thread) over
  `--idle-seconds` with no client connected, as % of one core. CPU time, not wall time: other
  load on the machine does not inflate it;
- **memory:** resident set growth from the empty broker, per partition;
- **metadata:** wall time of a Metadata request for every topic (confluent-kafka's
  list_topics, median of 5; includes librdkafka parsing the answer);
- **restart:** a clean stop (its time beside, and whether the broker's close finished rather
  than being killed), then from the new process's start until one record to every
  partition is acknowledged (acks=1, one Produce request a topic, each partition's own answer
  checked: produce_to_all); the start (until the port answers), the broker's CPU time and
  the producing client's (this process) beside it.

Targets (issue 38): idle CPU <= 2 % of a core, <= 20 KiB per partition, created in <= 30 s,
restart <= 60 s, Metadata for all <= 500 ms, at 50,000 partitions. Wall-time figures depend on
what else runs: the report records the load average beside them.

Writes DIR/partition_breadth.json and prints one line per layout. A script, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from broker.handlers.partition_limits import MAX_PARTITIONS_PER_REQUEST  # noqa: E402
from broker_launcher import BrokerProcess, broker_command, free_port  # noqa: E402
from machine_facts import machine_facts  # noqa: E402

BENCH = Path(__file__).resolve().parent
SETTLE_S = 5.0
FRESH_DISK_GIB = 8  # ext4's default of an inode per 16 KiB: 524,288, for ~100,000 files and directories
RESTART_LIMIT_S = 600.0  # a restart not done by then is reported as not done, with how far it got  # after creation, before the idle window: the first rounds of the periodic tasks


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=50_000)
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--modes", default="segment,commitlog")
    ap.add_argument("--idle-seconds", type=float, default=30.0)
    ap.add_argument("--results-dir", type=Path, default=BENCH / "results")
    ap.add_argument("--work-dir", type=Path, default=None,
                    help="where the data dirs go (default: a fresh ext4 of its own per layout, as root; else a temp dir)")
    return ap.parse_args(argv)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def wait_for_leaders(bootstrap: str, topics: list[str], per_topic: int, timeout_s: float) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            md = admin.list_topics(timeout=30).topics
        except Exception:  # not answering yet (a restart)
            time.sleep(0.1)
            continue
        if all(t in md and len(md[t].partitions) == per_topic and all(p.leader >= 0 for p in md[t].partitions.values())
               for t in topics):
            return
        time.sleep(0.1)
    raise RuntimeError(f"no leader for every partition within {timeout_s:.0f} s")


def create(bootstrap: str, topics: list[str], per_topic: int) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    started = time.monotonic()
    per_request = max(1, MAX_PARTITIONS_PER_REQUEST // per_topic)  # Kafka's controller refuses more
    for i in range(0, len(topics), per_request):
        batch = [NewTopic(t, per_topic, 1) for t in topics[i:i + per_request]]
        for f in admin.create_topics(batch, request_timeout=600).values():
            f.result(timeout=600)
    wait_for_leaders(bootstrap, topics, per_topic, 600)
    return time.monotonic() - started


def metadata_s(bootstrap: str, runs: int = 5) -> float:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.list_topics(timeout=60)  # connected and warmed
    took = []
    for _ in range(runs):
        started = time.monotonic()
        admin.list_topics(timeout=60)
        took.append(time.monotonic() - started)
    return statistics.median(took)


def produce_to_all(bootstrap: str, topics: list[str], per_topic: int, timeout_s: float) -> int:
    """One record to every partition, acks=1; returns how many were acknowledged within
    `timeout_s` (every one, or fewer: the restart did not make it).

    One Produce request (v9) per topic, naming each of its partitions with a batch of one record,
    all sent before the answers are read; a partition whose answer is an error (not loaded yet,
    say) is asked again in the next round. Each partition counts once its own answer says error
    0 with an offset. librdkafka did this before: one client holding 50,000 partitions spent
    114.6 s of its own CPU on it, growing with the square of the count, and that, not the broker,
    set the figure (bench/README.md)."""
    from compat_tests.helpers.raw_kafka import REF, RawKafka, build_request, make_batch

    host, port = bootstrap.rsplit(":", 1)
    batch = make_batch([b"x"])
    pending = {t: list(range(per_topic)) for t in topics}
    acked, deadline = 0, time.monotonic() + timeout_s
    with RawKafka(host, int(port), timeout=timeout_s) as client:
        while pending and time.monotonic() < deadline:
            sent = [(t, client.send(build_request(0, REF["produce"], transactional_id=None, acks=1, timeout=30_000,
                                                  topic_data=[{"name": t, "partition_data": [
                                                      {"index": i, "records": batch} for i in parts]}])))
                    for t, parts in pending.items()]
            for t, cid in sent:
                (answer,) = client.recv(0, REF["produce"], cid, timeout=max(1.0, deadline - time.monotonic())).responses
                done = {p.index for p in answer.partition_responses if p.error_code == 0 and p.base_offset >= 0}
                acked += len(done)
                pending[t] = [i for i in pending[t] if i not in done]
            pending = {t: parts for t, parts in pending.items() if parts}
            if pending:
                time.sleep(0.1)  # partitions still loading: ask again shortly
    return acked


def measure(mode: str, args, work: Path) -> dict:
    per_topic = args.partitions // args.topics
    topics = [f"breadth-{i}" for i in range(args.topics)]
    data = work / mode
    shutil.rmtree(data, ignore_errors=True)
    port = free_port()
    command = broker_command("twinlog", None, ["--storage-mode", mode], data / "data", "127.0.0.1", port)
    broker = BrokerProcess(command, "127.0.0.1", port, data / "broker.log")
    data.mkdir(parents=True)
    broker.start()
    try:
        empty_kib = rss_kib(broker.proc.pid)
        create_s = create(broker.bootstrap, topics, per_topic)
        time.sleep(SETTLE_S)
        cpu0, t0 = broker.cpu_seconds(), time.monotonic()
        time.sleep(args.idle_seconds)
        idle_pct = 100 * (broker.cpu_seconds() - cpu0) / (time.monotonic() - t0)
        kib_per_partition = (rss_kib(broker.proc.pid) - empty_kib) / (per_topic * args.topics)
        meta_s = metadata_s(broker.bootstrap)
        # The stop waits for the broker's own close: a launcher's usual 15 s grace then SIGKILL
        # made this restart a crash recovery whenever the close took longer (10,000 segment
        # partitions took 32 s to close at load 12), and measured that instead.
        stopping = time.monotonic()
        stop_clean = broker.stop(grace=RESTART_LIMIT_S) == 0
        stop_s = time.monotonic() - stopping
        started = time.monotonic()
        broker.start(timeout=RESTART_LIMIT_S)
        start_s, start_cpu_s = time.monotonic() - started, broker.cpu_seconds()
        client = os.times()
        acked = produce_to_all(broker.bootstrap, topics, per_topic, RESTART_LIMIT_S)
        restart_s = time.monotonic() - started if acked == per_topic * args.topics else None
        # the client's CPU beside the broker's: librdkafka's had taken twice the broker's
        client_cpu_s = sum(os.times()[:2]) - sum(client[:2])
        restart_cpu_s = broker.cpu_seconds()
    finally:
        broker.stop()
    return {"mode": mode, "partitions": per_topic * args.topics, "topics": args.topics, "create_s": create_s,
            "idle_cpu_pct": idle_pct, "kib_per_partition": kib_per_partition, "metadata_s": meta_s,
            "stop_s": stop_s, "stop_clean": stop_clean, "start_s": start_s, "start_cpu_s": start_cpu_s,
            "restart_s": restart_s, "restart_cpu_s": restart_cpu_s, "client_cpu_s": client_cpu_s, "restart_acked": acked,
            "loadavg": os.getloadavg()}


def _on_fresh_disk(mode: str, args) -> dict:
    """The layout measured on an ext4 made for it (bench/loop_disk.py), removed after. On the
    machine's own filesystem a creation paid for whatever was deleted there in the minutes
    before: on an ext4 without a journal a new inode skips those freed recently (find_inode_bit,
    recently_deleted), and 50,000 segment partitions took 9.1 s, then 38.9, 60.3 and 90.0 s in
    four runs one after another (2026-12-07, load 1), against 7.9-10.4 s on a fresh disk."""
    from loop_disk import LoopDisk

    home = Path(tempfile.mkdtemp(prefix="twinlog-breadth-disk-"))
    try:
        with LoopDisk(image=home / "disk.img", size_gib=FRESH_DISK_GIB) as disk:
            row = measure(mode, args, disk.mount_point)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return {**row, "disk": "fresh ext4"}


def main(argv=None) -> None:
    args = parse_args(argv)
    fresh = args.work_dir is None and os.geteuid() == 0 and shutil.which("mkfs.ext4") is not None
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="twinlog-breadth-"))
    results = {"machine": machine_facts(), "rows": []}
    modes = args.modes.split(",")
    for mode in modes:
        row = _on_fresh_disk(mode, args) if fresh else {**measure(mode, args, work), "disk": str(work)}
        results["rows"].append(row)
        print(f"{mode}: {row['partitions']:,} partitions created in {row['create_s']:.1f} s; idle "
              f"{row['idle_cpu_pct']:.2f}% of a core; {row['kib_per_partition']:.1f} KiB/partition; "
              f"metadata {1000 * row['metadata_s']:.0f} ms; stop {row['stop_s']:.1f} s "
              f"({'clean' if row['stop_clean'] else 'NOT clean'}); start {row['start_s']:.1f} s (broker CPU "
              f"{row['start_cpu_s']:.1f} s); restart " + (
                  f"{row['restart_s']:.1f} s (broker CPU {row['restart_cpu_s']:.1f} s, client "
                  f"{row['client_cpu_s']:.1f} s) " if row["restart_s"] is not None else
                  f"not done in {RESTART_LIMIT_S:.0f} s ({row['restart_acked']:,} acknowledged) ") +
              f"(load {row['loadavg'][0]:.1f}; {row['disk']})", flush=True)
    # Removed only now, so that no layout's creation pays for the files of the one before: on
    # an ext4 without a journal a new inode skips those freed recently (find_inode_bit,
    # recently_deleted; 40 % of a creation's CPU in a perf profile here), and 3,000 new segment
    # partitions took 2.97 s of system time just after 60,000 files were deleted, 2.20 s before.
    for mode in modes if not fresh else ():
        shutil.rmtree(work / mode, ignore_errors=True)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "partition_breadth.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
