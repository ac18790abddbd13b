"""One measurement of the mode-comparison benchmark (compare.py): a broker started for it,
a topic, the load, the checks, the broker stopped.

Every cell gets a fresh broker and data directory, so no cell pays for another's files
(1000 open segments, dirty pages, a flusher walking old partitions). Durability settings:

    page_cache   nothing is fsynced on the produce path (Kafka's default)
    fsync_100ms  broker --flush-interval-ms 100: every open log fsynced every 100 ms
    fsync_ack    topic flush.messages=1: the batch is fsynced before the ack (group commit)
    memory       Tansu's in-memory storage (no disk at all)

A produce figure counts only records librdkafka saw acknowledged, and only once the broker's
high watermarks grew by as much (Tansu: the tail read back, its watermarks being off).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from broker_launcher import BrokerProcess, broker_command, free_port
from latency_workers import e2e_consume_worker, e2e_produce_worker, paced_produce_worker
from load_workers import PhaseError, fetch_worker, produce_worker, run_phase
from mock_cluster import MockCluster
from offset_check import partition_ends
from offset_check import total as read_back_total
from page_cache import evict
from python_client_workers import aiokafka_produce_worker, kafka_python_produce_worker
from raw_fetch import raw_fetch_worker
from topic_admin import check_acknowledged, create_topic, held_records

DURABILITY_ARGS = {"page_cache": [], "fsync_100ms": ["--flush-interval-ms", "100"], "fsync_ack": [], "memory": []}
DURABILITY_TOPIC = {"fsync_ack": {"flush.messages": "1"}}
CLIENT_WORKERS = {"confluent-kafka": produce_worker, "kafka-python": kafka_python_produce_worker,
                  "aiokafka": aiokafka_produce_worker}
SAMPLES_PER_S = 20_000  # latency samples asked of a run, whatever its rate
# Latency producers keep at most 5 requests in flight, the Java client's default (librdkafka's
# is 1,000,000). Measured at 64 partitions, 100 B, 100k records/s, linger 1 ms: with the
# librdkafka default the client sent ~9,000 requests/s of 1-2 small batches each, the broker's
# per-request cost saturated its core and p50 was 645 ms; with 5 in flight, 6.7 ms.
LATENCY_CLIENT = {"max.in.flight.requests.per.connection": 5}


@dataclass(frozen=True)
class Cell:
    broker: str  # twinlog | tansu
    mode: str  # segment | commitlog | memory
    partitions: int
    record_size: int
    durability: str
    client: str = "confluent-kafka"  # the load generator; kafka-python / aiokafka: secondary rows

    @property
    def name(self) -> str:
        name = f"{self.broker}/{self.mode}/p{self.partitions}/{self.record_size}B/{self.durability}"
        return name if self.client == "confluent-kafka" else f"{name}/{self.client}"


@dataclass
class Machine:
    broker_cpus: set[int] | None
    client_cpus: set[int] | None
    work: Path  # temporary directories go here (the repo's disk)

    @property
    def client_list(self):
        return sorted(self.client_cpus) if self.client_cpus else None


@contextmanager
def broker_for(cell: Cell, m: Machine):
    """A fresh broker for `cell`, stopped and its data removed on the way out."""
    work = Path(tempfile.mkdtemp(prefix="cell-", dir=m.work))
    (work / "data").mkdir()
    port = free_port()
    extra = []
    if cell.broker == "twinlog":
        extra = ["--storage-mode", cell.mode, *DURABILITY_ARGS[cell.durability]]
    cmd = broker_command(cell.broker, None, extra, work / "data", "127.0.0.1", port)
    broker = BrokerProcess(cmd, "127.0.0.1", port, work / "broker.log", m.broker_cpus)
    broker.start()
    broker.data_dir = work / "data"
    try:
        yield broker
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def make_topic(broker, cell: Cell, name: str) -> str:
    topic = f"{name}-{int(time.time() * 1000)}"
    create_topic(broker.bootstrap, topic, cell.partitions, DURABILITY_TOPIC.get(cell.durability))
    return topic


def count_held(broker, cell: Cell, topic: str) -> int:
    if cell.broker == "tansu":
        return read_back_total(partition_ends(broker.bootstrap, topic, cell.partitions))
    return held_records(broker.bootstrap, topic, cell.partitions)


def _spread(cell: Cell) -> dict:
    """With several partitions, records go uniformly over all of them (sticky partitioning off),
    as from many keyed producers: every partition receives small batches."""
    if cell.partitions == 1:
        return {"partition": 0}
    return {"partition": None, "client_config": {"sticky.partitioning.linger.ms": 0, "partitioner": "random"}}


def throughput(broker, cell: Cell, topic: str, m: Machine, seconds: float, linger_ms: int,
               max_bytes: int) -> dict:
    """Peak produce rate: one producer process with a full queue for `seconds` (or `max_bytes`)."""
    before = count_held(broker, cell, topic)
    params = [{"bootstrap": broker.bootstrap, "topic": topic, "value_size": cell.record_size,
               "linger_ms": linger_ms, "batch_bytes": 1 << 20, "queue_kbytes": 1 << 20,
               "count": max(1000, max_bytes // cell.record_size), "seconds": seconds, "check_every": 2000,
               "flush_timeout": 60, "cpus": m.client_list, **_spread(cell)}]
    run = run_phase(CLIENT_WORKERS[cell.client], params, seconds + 150, broker)
    (res,) = run.results
    check_acknowledged(res, count_held(broker, cell, topic) - before)
    secs = run.end_time - run.go_time
    return {"records": res["acked"], "seconds": secs, "mb_s": res["bytes"] / 1e6 / secs,
            "msgs_s": res["acked"] / secs, "linger_ms": linger_ms,
            "broker_cpu": run.broker_cpu_s / secs if run.broker_cpu_s is not None else None,
            "client_cpu": res["client_cpu_s"] / secs, "avg_batch_bytes": res.get("avg_batch_bytes"),
            "avg_batch_records": res.get("avg_batch_records")}


def latency(broker, cell: Cell, topic: str, m: Machine, rate: float, seconds: float, linger_ms: int) -> dict:
    """Send-to-ack latency of a producer held at `rate` records/s."""
    before = count_held(broker, cell, topic)
    res, out = _paced(broker, cell, topic, m, rate, seconds, linger_ms)
    check_acknowledged(res, count_held(broker, cell, topic) - before)
    return out


def latency_vs_mock(cell: Cell, m: Machine, rate: float, seconds: float, linger_ms: int) -> dict:
    """The latency phase's load against librdkafka's mock cluster on the broker's CPUs, a topic
    of the cell's partitions: a reference broker in C that keeps records in memory. Not a floor
    of the load generator: the mock serves each request on one thread and, at 100 B and 560k
    records/s, its p99 was above twinlog's (2026-12-07)."""
    with MockCluster(m.broker_cpus) as mock:
        mock.create_topic("latency-vs-mock", cell.partitions)
        res, out = _paced(mock, cell, "latency-vs-mock", m, rate, seconds, linger_ms)
    if res["unacked"] or res["failed"]:
        raise PhaseError(f"mock: {res['failed']} failed, {res['unacked']} unacknowledged")
    out.pop("_latencies_s")
    return out


def _paced(broker, cell: Cell, topic: str, m: Machine, rate: float, seconds: float, linger_ms: int):
    """(the worker's result, the figures) of one paced phase (latency_workers.py)."""
    params = [{"bootstrap": broker.bootstrap, "topic": topic, "value_size": cell.record_size,
               "linger_ms": linger_ms, "batch_bytes": 1 << 20, "rate": rate, "seconds": seconds,
               "sample_every": max(1, int(rate / SAMPLES_PER_S)), "flush_timeout": 60,
               "partitions": cell.partitions, "cpus": m.client_list,
               "partition": 0 if cell.partitions == 1 else None, "client_config": LATENCY_CLIENT}]
    run = run_phase(paced_produce_worker, params, seconds + 150, broker)
    (res,) = run.results
    return res, {"rate_asked": rate, "rate_achieved": res["sent"] / res["send_seconds"], "linger_ms": linger_ms,
                 "samples": len(res["latencies_s"]), **percentiles(res["latencies_s"]),
                 "broker_cpu": run.broker_cpu_s / res["send_seconds"] if run.broker_cpu_s is not None else None,
                 "client_cpu": res["client_cpu_s"] / res["send_seconds"], **res["p99_split"],
                 "_latencies_s": res["latencies_s"]}


def percentiles(latencies_s: list[float]) -> dict:
    import numpy as np

    if not latencies_s:
        return {"p50_ms": None, "p99_ms": None, "p999_ms": None, "max_ms": None}
    a = np.asarray(latencies_s) * 1000
    p50, p99, p999 = np.percentile(a, [50, 99, 99.9])
    return {"p50_ms": float(p50), "p99_ms": float(p99), "p999_ms": float(p999), "max_ms": float(a.max())}


def fill(broker, cell: Cell, topic: str, m: Machine, total_bytes: int, seconds: float) -> int:
    """Produce about `total_bytes` for the consume phases; returns the records held."""
    params = [{"bootstrap": broker.bootstrap, "topic": topic, "value_size": cell.record_size,
               "linger_ms": 5, "batch_bytes": 1 << 20, "queue_kbytes": 1 << 20,
               "count": max(1, total_bytes // cell.record_size), "seconds": seconds, "check_every": 500,
               "flush_timeout": 60, "cpus": m.client_list, **_spread(cell)}]
    (res,) = run_phase(produce_worker, params, seconds + 150, broker).results
    if res["failed"] or res["unacked"]:
        raise PhaseError(f"fill: {res['failed']} failed, {res['unacked']} unacknowledged")
    return res["acked"] + res["warmup_acked"]


def consume_pass(broker, cell: Cell, topic: str, m: Machine, fetch_bytes: int, seconds: float,
                 worker=fetch_worker) -> dict:
    """Read every record once from the start, checking offsets are consecutive (twinlog), with
    a confluent-kafka consumer (fetch_worker) or the raw reader (raw_fetch.py)."""
    ends = partition_ends(broker.bootstrap, topic, cell.partitions)
    ranges = {str(p): [e.low, e.end] for p, e in ends.items()}
    expected = read_back_total(ends)
    params = [{"bootstrap": broker.bootstrap, "topic": topic, "ranges": ranges, "fetch_bytes": fetch_bytes,
               "seconds": seconds, "cpus": m.client_list, "check_offsets": cell.broker != "tansu"}]
    run = run_phase(worker, params, seconds + 60, broker)
    (x,) = run.results
    if x["consumed"] < expected:
        raise PhaseError(f"read {x['consumed']:,} of {expected:,} records in {seconds:.0f} s")
    secs = x["t1"] - x["t0"]  # from assign() to the last record: a cold read pays its first I/O too
    return {"records": x["consumed"], "bytes": x["bytes"], "seconds": secs, "mb_s": x["bytes"] / 1e6 / secs,
            "msgs_s": x["consumed"] / secs, "fetch_bytes": fetch_bytes,
            "broker_cpu": run.broker_cpu_s / secs if run.broker_cpu_s is not None else None,
            "client_cpu": x["client_cpu_s"] / secs}


def consume(broker, cell: Cell, topic: str, m: Machine, fetch_bytes: int, seconds: float,
            hot_passes: int) -> dict:
    """Hot: passes after one warming pass (counted: the best); the same with the raw reader
    (raw_fetch.py; twinlog); cold: after evicting the files."""
    warm = consume_pass(broker, cell, topic, m, fetch_bytes, seconds)
    hot = [consume_pass(broker, cell, topic, m, fetch_bytes, seconds) for _ in range(hot_passes)]
    out = {"warm_up": warm, "hot": max(hot, key=lambda r: r["mb_s"]), "hot_passes": hot}
    if cell.broker == "tansu":
        out["cold"] = {"skipped": "in-memory broker: there is no page cache to drop"}
        return out
    out["hot_raw"] = max((consume_pass(broker, cell, topic, m, fetch_bytes, seconds, raw_fetch_worker)
                          for _ in range(hot_passes)), key=lambda r: r["mb_s"])
    eviction = evict(broker.data_dir)
    out["cold"] = {**consume_pass(broker, cell, topic, m, fetch_bytes, seconds), "eviction": eviction}
    return out


def end_to_end(broker, cell: Cell, topic: str, m: Machine, rate: float, seconds: float, linger_ms: int) -> dict:
    """Produce at `rate` into partition 0 while a consumer reads it; latency = seen - sent."""
    common = {"bootstrap": broker.bootstrap, "topic": topic, "partition": 0, "cpus": m.client_list,
              "seconds": seconds}
    expected = int(seconds * rate)
    params = [{**common, "value_size": max(cell.record_size, 8), "linger_ms": linger_ms,
               "batch_bytes": 1 << 20, "rate": rate, "flush_timeout": 60, "client_config": LATENCY_CLIENT},
              {**common, "expected": expected, "drain_s": 5.0, "sample_every": max(1, int(rate / SAMPLES_PER_S))}]
    run = run_phase(_e2e_dispatch, [{**p, "_role": i} for i, p in enumerate(params)], seconds + 150, broker)
    prod = next(r for r in run.results if r["role"] == "producer")
    cons = next(r for r in run.results if r["role"] == "consumer")
    if prod["unacked"]:
        raise PhaseError(f"e2e: {prod['unacked']} records never acknowledged")
    if cons["consumed"] < prod["sent"]:
        raise PhaseError(f"e2e: the consumer saw {cons['consumed']:,} of {prod['sent']:,} records")
    return {"rate_asked": rate, "rate_achieved": prod["sent"] / prod["send_seconds"], "linger_ms": linger_ms,
            "samples": len(cons["latencies_s"]), **percentiles(cons["latencies_s"]),
            "_latencies_s": cons["latencies_s"]}


def _e2e_dispatch(p: dict, ready, go, out) -> None:
    (e2e_produce_worker if p["_role"] == 0 else e2e_consume_worker)(p, ready, go, out)


def mock_ceiling(record_size: int, m: Machine, seconds: float, linger_ms: int) -> dict:
    """The load generator against librdkafka's in-process mock cluster (`test.mock.num.brokers`):
    the same producer process, settings and record size, and no broker of ours at all. The mock
    broker's threads share the client's CPU(s), where twinlog has a CPU of its own."""
    params = [{"bootstrap": "mock:9092", "topic": "mock-ceiling", "value_size": record_size,
               "linger_ms": linger_ms, "batch_bytes": 1 << 20, "queue_kbytes": 1 << 20,
               "count": 50_000_000, "seconds": seconds, "check_every": 2000, "flush_timeout": 60,
               "partition": 0, "cpus": m.client_list, "client_config": {"test.mock.num.brokers": 1}}]
    run = run_phase(produce_worker, params, seconds + 120)
    (res,) = run.results
    if res["failed"] or res["unacked"]:
        raise PhaseError(f"mock: {res['failed']} failed, {res['unacked']} unacknowledged")
    secs = run.end_time - run.go_time
    return {"record_size": record_size, "records": res["acked"], "seconds": secs,
            "msgs_s": res["acked"] / secs, "mb_s": res["bytes"] / 1e6 / secs, "linger_ms": linger_ms,
            "client_cpu": res["client_cpu_s"] / secs}
