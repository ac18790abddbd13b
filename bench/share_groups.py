"""Share groups against a consumer group: records/s through 1, 4 and 16 Java consumers of one
group reading the same topic, per layout, against a real broker over the network.

    .venv/bin/python bench/share_groups.py [--records 200000] [--partitions 4] [--consumers 1,4,16]
        [--layouts segment,commitlog] [--record-size 100]

Per layout, one fresh broker (bench/broker_launcher.py, share.auto.offset.reset earliest),
pinned to CPU 0 with the clients on CPU 1 where there are two. The topic (--partitions) is
filled once with --records records by a confluent-kafka producer, then read whole by a fresh
group per cell: a share group (KafkaShareConsumer, implicit acknowledgement: each poll
accepts the previous one's records) and a consumer group (KafkaConsumer, the consumer
protocol, earliest), each as one JVM with N consumer threads (bench/java/QueueBench.java,
kafka-clients 4.3.0). A cell's rate is the distinct records seen over the time from the first
record to the last; a cell that does not see every record within --timeout fails the run.
With 4 partitions, 16 share consumers share each partition four ways, where 12 of 16
consumer-group members sit idle. Writes bench/results/share-groups.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from broker_launcher import BrokerProcess, broker_command, free_port, pinned  # noqa: E402
from machine_facts import machine_facts  # noqa: E402
from topic_admin import create_topic  # noqa: E402

from compat_tests.helpers.java_client import classpath_jars  # noqa: E402

BENCH = Path(__file__).resolve().parent
HOST = "127.0.0.1"


def _cpus() -> tuple[set[int] | None, list[int] | None]:
    usable = sorted(os.sched_getaffinity(0))
    return ({usable[0]}, usable[1:]) if len(usable) >= 2 else (None, None)


def compile_bench(work: Path) -> str:
    """javac QueueBench.java into `work`; the classpath to run it with."""
    jars = ":".join(str(j) for j in classpath_jars())
    subprocess.run(["javac", "-cp", jars, "-d", str(work), str(BENCH / "java" / "QueueBench.java")], check=True)
    return f"{jars}:{work}"


def fill(bootstrap: str, topic: str, records: int, size: int) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1 << 20, "acks": "1"})
    value = b"x" * size
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=value)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120):
        raise RuntimeError("the fill did not finish")


def cell(classpath: str, bootstrap: str, topic: str, kind: str, consumers: int, records: int,
         timeout: int, client_cpus: list[int] | None) -> dict:
    group = f"bench-{kind}-{consumers}-{time.time_ns()}"
    command = ["java", "-Xmx512m", "-cp", classpath, "QueueBench", bootstrap, topic, group, kind, str(consumers),
               str(records), str(timeout)]
    done = subprocess.run(pinned(command, client_cpus), capture_output=True, text=True, timeout=timeout + 60)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["records"] != records:
        raise RuntimeError(f"{kind} x{consumers}: saw {result['records']} of {records}\n{done.stderr[-2000:]}")
    return {"kind": kind, "consumers": consumers, **result}


def run_layout(layout: str, args, classpath: str, work: Path) -> list[dict]:
    broker_cpus, client_cpus = _cpus()
    data, port = work / f"data-{layout}", free_port()
    extra = ["--storage-mode", layout, "--share-auto-offset-reset", "earliest"]
    broker = BrokerProcess(broker_command("twinlog", None, extra, data, HOST, port), HOST, port,
                           work / f"broker-{layout}.log", broker_cpus)
    broker.start()
    try:
        topic = f"queue-{layout}"
        create_topic(broker.bootstrap, topic, args.partitions)
        fill(broker.bootstrap, topic, args.records, args.record_size)
        rows = []
        for consumers in args.consumers:
            for kind in ("share", "classic"):
                row = cell(classpath, broker.bootstrap, topic, kind, consumers, args.records, args.timeout, client_cpus)
                rows.append({"layout": layout, **row})
                print(json.dumps(rows[-1]), flush=True)
        return rows
    finally:
        broker.stop()


def markdown(rows: list[dict], facts: dict, load: tuple[float, float, float], args) -> str:
    lines = [f"{args.records} records of {args.record_size} B over {args.partitions} partitions; "
             f"load average before the run {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}; "
             f"{facts.get('cpus_usable', '?')} usable CPUs ({facts.get('cpu_model', '?')}).", "",
             "| layout | consumers | share group records/s | consumer group records/s | share deliveries |",
             "|---|---|---|---|---|"]
    by = {(r["layout"], r["consumers"], r["kind"]): r for r in rows}
    for layout in args.layouts:
        for n in args.consumers:
            share, classic = by[(layout, n, "share")], by[(layout, n, "classic")]
            lines.append(f"| {layout} | {n} | {share['records_per_s']:,.0f} | {classic['records_per_s']:,.0f} "
                         f"| {share['deliveries']:,} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--consumers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4, 16])
    parser.add_argument("--layouts", type=lambda s: s.split(","), default=["segment", "commitlog"])
    parser.add_argument("--timeout", type=int, default=180, help="seconds a cell may take")
    args = parser.parse_args()
    load = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="share-bench-"))
    try:
        classpath = compile_bench(work / "classes")
        rows = [row for layout in args.layouts for row in run_layout(layout, args, classpath, work)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = BENCH / "results"
    facts = machine_facts()
    (out / "share-groups.json").write_text(json.dumps({"machine": facts, "load_before": load, "rows": rows}, indent=1))
    (out / "share-groups.md").write_text(markdown(rows, facts, load, args))
    print(markdown(rows, facts, load, args))


if __name__ == "__main__":
    main()
