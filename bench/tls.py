"""What TLS costs (issue 17): produce and consume over an SSL listener against a PLAINTEXT one of
the same broker, in the same run, 100 B and 16 KB records, rounds alternated so a shared machine
loads both alike.

    .venv/bin/python bench/tls.py [--rounds 3] [--seconds 4] [--mode segment]

One broker (bench/broker_launcher.py) with two listeners, PLAINTEXT and SSL (a throwaway CA,
broker/security/self_signed_tls.py; no client certificates). The client is confluent-kafka (librdkafka),
acks=1, linger.ms 5, one partition per topic:
- produce: as fast as librdkafka takes records for --seconds, then flush; records/s and MB/s
  of what was acknowledged;
- consume: that topic from its start to its end by a fresh consumer on the same protocol;
  MB/s. Under TLS the broker cannot sendfile the record bytes: it preads the file regions in
  pieces of up to 256 KB and writes them through the TLS transport (broker/net/answer_writer.py).
Each also gives the broker's CPU time per MB (the client's TLS work is on the same machine,
so rates are bound by both ends; the broker's CPU per MB is its own cost).

Prints each run, then the medians and the SSL / PLAINTEXT ratios; writes bench/results/tls.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from broker_launcher import BrokerProcess, broker_command, free_port  # noqa: E402

from broker.security.self_signed_tls import make_tls_files  # noqa: E402

SIZES = (100, 16384)
PROTOCOLS = ("PLAINTEXT", "SSL")


def _conf(protocol: str, ports: dict, ca: Path) -> dict:
    conf = {"bootstrap.servers": f"127.0.0.1:{ports[protocol]}"}
    if protocol == "SSL":
        conf.update({"security.protocol": "ssl", "ssl.ca.location": str(ca)})
    return conf


def produce(conf: dict, topic: str, size: int, seconds: float) -> tuple[int, float]:
    """(records acknowledged, seconds from first send to the last ack)."""
    from confluent_kafka import Producer
    producer = Producer({**conf, "acks": 1, "linger.ms": 5, "batch.size": 1 << 20,
                         "queue.buffering.max.kbytes": 256 << 10, "message.max.bytes": 2 << 20})
    producer.produce(topic, b"w")  # creates the topic (auto-create) before the clock starts
    assert producer.flush(30) == 0
    value = b"x" * size
    acked = [0]

    def done(err, _msg):
        if err is None:
            acked[0] += 1

    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        try:
            producer.produce(topic, value, on_delivery=done)
        except BufferError:
            producer.poll(0.005)
    producer.poll(0)
    assert producer.flush(120) == 0
    return acked[0], time.perf_counter() - start


def consume(conf: dict, topic: str, count: int) -> tuple[int, float]:
    """(bytes of values read, seconds) for `count` records after the warm-up one."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    consumer = Consumer({**conf, "group.id": f"tls-bench-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                         "fetch.max.bytes": 50 << 20, "max.partition.fetch.bytes": 8 << 20})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = nbytes = 0
    start = None
    deadline = time.monotonic() + 300
    try:
        while got < count + 1 and time.monotonic() < deadline:
            for m in consumer.consume(10_000, 1.0):
                if m.error() is None:
                    if start is None:
                        start = time.perf_counter()  # from the first record: connect and join apart
                    got += 1
                    nbytes += len(m.value())
        assert got == count + 1, f"consumed {got} of {count + 1}"
        return nbytes, time.perf_counter() - start
    finally:
        consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--mode", default="segment", choices=("segment", "commitlog"))
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "tls.json")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tls-bench-"))
    files = make_tls_files(work / "certs", clients=())
    ports = {"PLAINTEXT": free_port(), "SSL": free_port()}
    extra = ["--storage-mode", args.mode, "--listeners",
             f"PLAINTEXT://127.0.0.1:{ports['PLAINTEXT']},SSL://127.0.0.1:{ports['SSL']}",
             "--ssl-keystore-location", str(files.broker_cert), "--ssl-key-location", str(files.broker_key)]
    (work / "data").mkdir()
    broker = BrokerProcess(broker_command("twinlog", None, extra, work / "data", "127.0.0.1", ports["PLAINTEXT"]),
                           "127.0.0.1", ports["PLAINTEXT"], work / "broker.log")
    runs = []
    broker.start()
    try:
        for round_no in range(args.rounds):
            for size in SIZES:
                order = PROTOCOLS if round_no % 2 == 0 else PROTOCOLS[::-1]
                for protocol in order:
                    conf = _conf(protocol, ports, files.ca)
                    topic = f"tls-{protocol.lower()}-{size}-{round_no}"
                    cpu0 = broker.cpu_seconds()
                    count, p_s = produce(conf, topic, size, args.seconds)
                    cpu1 = broker.cpu_seconds()
                    nbytes, c_s = consume(conf, topic, count)
                    cpu2 = broker.cpu_seconds()
                    mb = count * size / 1e6
                    run = {"round": round_no, "size": size, "protocol": protocol, "records": count,
                           "produce_rec_s": count / p_s, "produce_mb_s": mb / p_s,
                           "produce_cpu_ms_per_mb": (cpu1 - cpu0) * 1e3 / mb,
                           "consume_mb_s": nbytes / 1e6 / c_s, "consume_rec_s": count / c_s,
                           "consume_cpu_ms_per_mb": (cpu2 - cpu1) * 1e3 / mb}
                    runs.append(run)
                    print(f"round {round_no} {size:>5} B {protocol:<9} produce {run['produce_rec_s']:>9,.0f} rec/s "
                          f"{run['produce_mb_s']:7.1f} MB/s cpu {run['produce_cpu_ms_per_mb']:6.1f} ms/MB | consume "
                          f"{run['consume_rec_s']:>9,.0f} rec/s {run['consume_mb_s']:7.1f} MB/s "
                          f"cpu {run['consume_cpu_ms_per_mb']:6.1f} ms/MB", flush=True)
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)

    summary = []
    print("\n| records | direction | PLAINTEXT | SSL | SSL / PLAINTEXT | broker CPU ms/MB PLAINTEXT -> SSL |")
    print("|---|---|---|---|---|---|")
    for size in SIZES:
        for direction in ("produce", "consume"):
            med = {p: {k: statistics.median(r[f"{direction}_{k}"] for r in runs
                                            if r["size"] == size and r["protocol"] == p)
                       for k in ("mb_s", "rec_s", "cpu_ms_per_mb")} for p in PROTOCOLS}
            ratio = med["SSL"]["mb_s"] / med["PLAINTEXT"]["mb_s"]
            summary.append({"size": size, "direction": direction, "medians": med, "ratio": ratio})
            print(f"| {size} B | {direction} | {med['PLAINTEXT']['rec_s']:,.0f} rec/s, "
                  f"{med['PLAINTEXT']['mb_s']:.1f} MB/s | {med['SSL']['rec_s']:,.0f} rec/s, {med['SSL']['mb_s']:.1f} MB/s "
                  f"| {ratio:.2f} | {med['PLAINTEXT']['cpu_ms_per_mb']:.1f} -> {med['SSL']['cpu_ms_per_mb']:.1f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"mode": args.mode, "rounds": args.rounds, "seconds": args.seconds,
                                    "runs": runs, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
