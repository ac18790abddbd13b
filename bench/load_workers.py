"""Load generators: confluent-kafka (librdkafka) producers and consumers, each in its own
spawned process, optionally pinned to CPUs apart from the broker's.

A phase runs like a starting pistol: every worker connects and warms up (producers send and
flush one record; consumers fetch metadata), reports "ready", and waits for "go". The parent
stamps the start and samples the broker's CPU time between "all ready" and "go", so setup
cost is outside the timed window and the window is the same for every worker.

Nothing is counted that the broker did not acknowledge. Producers ask librdkafka for delivery
reports on failures only (a per-record Python callback would cost more than the broker's
work at 100-byte records): a record that neither failed nor is still queued once flush()
returns was acknowledged. run.py then checks those counts against the broker's own high
watermarks, and the consumers check every offset they see is the next one expected.
"""

from __future__ import annotations

import json
import os
import queue
import resource
import time
import traceback
from dataclasses import dataclass, field

import multiprocessing as mp


class PhaseError(RuntimeError):
    """A load phase could not produce an honest figure (errors, loss, timeouts)."""


def _cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)  # all threads: librdkafka's included
    return r.ru_utime + r.ru_stime


def _pin(cpus) -> None:
    if cpus:
        os.sched_setaffinity(0, set(cpus))  # before librdkafka starts its threads: they inherit


def produce_worker(p: dict, ready, go, out) -> None:
    _pin(p["cpus"])
    from confluent_kafka import Producer

    failures: list[str] = []  # the first few delivery failures; all of them are counted
    failed = [0]
    client_errors: list[str] = []  # connection-level reports; a record they cost shows as failed
    stats = {"batch_bytes_sum": 0.0, "batch_msgs_sum": 0.0, "batches": 0, "txretries": 0}

    def on_failure(err, _msg):
        failed[0] += 1
        if len(failures) < 5:
            failures.append(str(err))

    def on_stats(text):
        s = json.loads(text)
        for t in s.get("topics", {}).values():
            size, cnt = t.get("batchsize", {}), t.get("batchcnt", {})
            n = size.get("cnt", 0)
            stats["batch_bytes_sum"] += size.get("sum", 0)
            stats["batch_msgs_sum"] += cnt.get("sum", 0)
            stats["batches"] += n
        stats["txretries"] = sum(b.get("txretries", 0) for b in s.get("brokers", {}).values())

    producer = Producer({
        "bootstrap.servers": p["bootstrap"], "acks": 1, "compression.type": "none",
        "linger.ms": p["linger_ms"], "batch.size": p["batch_bytes"], "batch.num.messages": 1_000_000,
        "queue.buffering.max.kbytes": p["queue_kbytes"], "queue.buffering.max.messages": 10_000_000,
        "delivery.report.only.error": True, "on_delivery": on_failure,
        "statistics.interval.ms": 500, "stats_cb": on_stats,
        "error_cb": lambda err: client_errors.append(str(err)),
        **p.get("client_config", {}),
    })
    topic, value, partition = p["topic"], os.urandom(p["value_size"]), p["partition"]
    kwargs = {"partition": partition} if partition is not None else {}
    producer.produce(topic, value, **kwargs)
    if producer.flush(30) or failures:
        raise PhaseError(f"warm-up record not acknowledged: {failures[:3] or 'timeout'}")
    stats.update(batch_bytes_sum=0.0, batch_msgs_sum=0.0, batches=0)
    ready.put(os.getpid())
    go.wait(60)

    produce, poll = producer.produce, producer.poll
    count, check_every = p["count"], p["check_every"]
    cpu0, t0, sent = _cpu_self(), time.monotonic(), 0
    deadline = t0 + p["seconds"]
    while sent < count and time.monotonic() < deadline:
        for _ in range(min(check_every, count - sent)):
            try:
                produce(topic, value, **kwargs)
            except BufferError:  # librdkafka's queue is full: serve it until this record fits
                while True:
                    poll(0.002)
                    try:
                        produce(topic, value, **kwargs)
                        break
                    except BufferError:
                        pass
        sent += min(check_every, count - sent)
        poll(0)
        if failed[0]:
            break
    left = producer.flush(p["flush_timeout"])
    t1, cpu1 = time.monotonic(), _cpu_self()
    producer.poll(0.6)  # one more statistics report for the tail of the run
    out.put({
        "worker": os.getpid(), "sent": sent, "unacked": left, "failed": failed[0],
        "acked": sent - left - failed[0], "warmup_acked": 1,
        "bytes": (sent - left - failed[0]) * len(value), "t0": t0, "t1": t1,
        "client_cpu_s": cpu1 - cpu0, "errors": failures, "client_errors": client_errors[:5],
        "avg_batch_bytes": stats["batch_bytes_sum"] / stats["batches"] if stats["batches"] else None,
        "avg_batch_records": stats["batch_msgs_sum"] / stats["batches"] if stats["batches"] else None,
        "txretries": stats["txretries"],
    })


def fetch_worker(p: dict, ready, go, out) -> None:
    """Read every record of `p["ranges"]` ({partition: [low, high)}) once, from the start."""
    _pin(p["cpus"])
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    client_errors: list[str] = []
    consumer = Consumer({
        "bootstrap.servers": p["bootstrap"],
        # librdkafka wants a group.id, but with assign() and no commits the group is never used.
        "group.id": f"twinlog-bench-{os.getpid()}", "enable.auto.commit": False,
        "enable.auto.offset.store": False, "enable.partition.eof": False,
        "fetch.max.bytes": p["fetch_bytes"], "max.partition.fetch.bytes": p["fetch_bytes"],
        "receive.message.max.bytes": p["fetch_bytes"] + (1 << 20),
        "queued.max.messages.kbytes": max(65536, 4 * p["fetch_bytes"] >> 10),
        "fetch.wait.max.ms": 100, "check.crcs": False,
        "error_cb": lambda err: client_errors.append(str(err)),
        **p.get("client_config", {}),
    })
    consumer.list_topics(p["topic"], timeout=30)  # connect and learn the leader before "go"
    ranges = {int(k): v for k, v in p["ranges"].items()}
    expected_total = sum(hi - lo for lo, hi in ranges.values())
    next_offset = {part: lo for part, (lo, _hi) in ranges.items()}
    check = p.get("check_offsets", True)  # off for a peer that numbers batches wrongly (Tansu)
    ready.put(os.getpid())
    go.wait(60)

    cpu0, t0 = _cpu_self(), time.monotonic()
    consumer.assign([TopicPartition(p["topic"], part, lo) for part, (lo, hi) in ranges.items() if hi > lo])
    seen = nbytes = first_bytes = 0
    t_first = None
    deadline = t0 + p["seconds"]
    while seen < expected_total and time.monotonic() < deadline:
        # consume(n, timeout) blocks until it has n records or the timeout passes, so it would
        # stall at the end of every fetch response: take what is queued, wait only for one.
        msgs = consumer.consume(num_messages=p.get("consume_batch", 256), timeout=0) or \
            consumer.consume(num_messages=1, timeout=0.5)
        for m in msgs:
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                raise PhaseError(f"consumer error: {err}")
            part, off = m.partition(), m.offset()
            if check and off != next_offset[part]:
                raise PhaseError(f"partition {part}: got offset {off}, expected {next_offset[part]}")
            next_offset[part] = off + 1
            seen += 1
            nbytes += len(m)  # value length, without another copy
        if msgs and t_first is None:
            t_first, first_bytes = time.monotonic(), nbytes
    t1, cpu1 = time.monotonic(), _cpu_self()
    consumer.close()
    out.put({
        "worker": os.getpid(), "expected": expected_total, "consumed": seen, "bytes": nbytes,
        "t0": t0, "t_first": t_first, "t1": t1, "first_bytes": first_bytes,
        "client_cpu_s": cpu1 - cpu0, "client_errors": client_errors[:5],
    })


@dataclass
class PhaseRun:
    results: list[dict]
    go_time: float
    end_time: float
    broker_cpu_s: float | None
    notes: list[str] = field(default_factory=list)


def _trampoline(target, params, ready, go, out):
    try:
        target(params, ready, go, out)
    except BaseException as e:  # noqa: BLE001 - carried to the parent, which fails the phase
        out.put({"worker": os.getpid(), "exception": f"{type(e).__name__}: {e}",
                 "traceback": traceback.format_exc()[-2000:]})


def run_phase(target, params: list[dict], budget_s: float, broker=None) -> PhaseRun:
    """Start one process per params dict, start them together, collect their results.
    Every process is gone when this returns, whatever happened."""
    ctx = mp.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_trampoline, args=(target, p, ready, go, out), daemon=True) for p in params]
    hard_deadline = time.monotonic() + budget_s
    try:
        for proc in procs:
            proc.start()
        results: list[dict] = []
        for _ in procs:  # wait for every worker's "ready" (an early failure comes on `out`)
            while True:
                _check_deadline(hard_deadline, procs, "warm-up")
                try:
                    ready.get(timeout=0.2)
                    break
                except queue.Empty:
                    _drain_failures(out, results)
                    if any(p.exitcode is not None for p in procs):
                        time.sleep(0.5)
                        _drain_failures(out, results)
                        raise PhaseError("a load worker exited before it was ready")
        cpu0 = broker.cpu_seconds() if broker else None
        go_time = time.monotonic()
        go.set()
        while len(results) < len(procs):
            _check_deadline(hard_deadline, procs, "run")
            try:
                results.append(out.get(timeout=0.2))
            except queue.Empty:
                if broker:
                    broker.check_alive()
                if not any(p.is_alive() for p in procs) and out.empty():
                    time.sleep(0.5)
                    if out.empty():
                        raise PhaseError("a load worker died without a result")
        end_time = max(r.get("t1", time.monotonic()) for r in results)
        cpu1 = broker.cpu_seconds() if broker else None
        failed = [r for r in results if "exception" in r]
        if failed:
            raise PhaseError(f"load worker failed: {failed[0]['exception']}\n{failed[0]['traceback']}")
        return PhaseRun(results, go_time, end_time, None if cpu0 is None else cpu1 - cpu0)
    finally:
        for proc in procs:
            if proc.pid is None:  # never started
                continue
            proc.join(timeout=max(0.0, min(10.0, hard_deadline - time.monotonic())) or 0.1)
            if proc.is_alive():
                proc.kill()
                proc.join(5)


def _check_deadline(deadline: float, procs, stage: str) -> None:
    if time.monotonic() > deadline:
        raise PhaseError(f"load workers exceeded the phase budget during {stage}")


def _drain_failures(out, results: list[dict]) -> None:
    try:
        r = out.get_nowait()
    except queue.Empty:
        return
    if "exception" in r:
        raise PhaseError(f"load worker failed: {r['exception']}\n{r['traceback']}")
    results.append(r)
