"""Latency load generators (confluent-kafka), run by load_workers.run_phase like the others.

paced_produce_worker: a producer held at a fixed rate (records are released every millisecond,
as many as are due), so latency is measured at a chosen fraction of the peak the throughput
phase found rather than with the queue full. Latency is librdkafka's own per-record figure,
`Message.latency()`: from the produce() call to the delivery report, so it includes linger,
the client's queue, the network and the broker's acknowledgement. A Python callback for every
record would cost more client CPU than the broker spends at 100-byte records, so only every
`sample_every`-th record carries an on_delivery callback (records without one never reach
Python); the sample is uniform over the run, so its percentiles estimate the population's.
Records that fail without a callback still show: flush() leaves them unacknowledged, and the
caller compares the acknowledged count with the broker's high watermarks. Beside it, librdkafka's
own statistics split the p99 (`p99_split`): a record's wait in the client's queue (linger, and a
free slot of the 5 requests in flight), a request's wait to be written, and its round trip, which
holds the broker's time.

The load generator must not add pauses of its own to the figure: librdkafka computes
`latency()` when poll() serves the delivery report in the Python thread, not when the ack
arrived, so a pause of that thread counts against every record acknowledged during it. Each
worker runs its measured phase with Python's cyclic collector off (`_collector_off`). With it
on, the worker's first full collection fell about 165 ms into every phase and held the thread
11 ms, and the records acknowledged meanwhile were reported 11-20 ms late (2026-12-07, the
fsync-before-ack cell, broker and client timelines side by side). What the phase makes is freed
by reference counting. (Waiting in poll(timeout) instead of sleep() between passes did not
help: librdkafka takes whole milliseconds, so the sub-millisecond waits became a busy loop.)

e2e_produce_worker / e2e_consume_worker: end-to-end latency. The producer writes
CLOCK_MONOTONIC nanoseconds (shared by every process on the machine) into the first 8 bytes
of each value; the consumer, assigned at the partitions' ends before "go", subtracts it from
its own clock when the record reaches the application (consume()).
"""

from __future__ import annotations

import gc
import json
import os
import struct
import time
from contextlib import contextmanager

from load_workers import PhaseError, _cpu_self, _pin

_STAMP = struct.Struct(">q")
STATS_INTERVAL_MS = 1000
# p99_split's parts: librdkafka's per-broker windows (reset at each statistics emission), in µs.
SPLIT = {"queue": "int_latency", "send_buffer": "outbuf_latency", "round_trip": "rtt"}


def _stats_windows(windows: list[dict]):
    """A stats_cb keeping, per statistics window of each broker that sent requests, each part's
    (p99 µs, count)."""
    def on_stats(raw: str) -> None:
        for broker in json.loads(raw)["brokers"].values():
            if broker["nodeid"] >= 0 and broker["rtt"]["cnt"]:
                windows.append({part: (broker[key]["p99"], broker[key]["cnt"]) for part, key in SPLIT.items()})
    return on_stats


def p99_split(windows: list[dict]) -> dict:
    """Each part's p99 in ms over the run: the windows' p99s weighted by their counts, an estimate,
    since librdkafka keeps no histogram of the whole run."""
    split = {}
    for part in SPLIT:
        total = sum(w[part][1] for w in windows)
        split[f"{part}_p99_ms"] = (sum(p99 * n for p99, n in (w[part] for w in windows)) / total / 1000
                                   if total else None)
    return split


@contextmanager
def _collector_off():
    """The measured phase without the cyclic collector's pauses (the module's docstring)."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


def _paced_loop(p: dict, produce_burst, poll) -> tuple[int, float, float]:
    """Release records at p["rate"] per second for p["seconds"]: every pass (about 1 ms apart)
    calls produce_burst(first, n) for the records due since the last one, at most 5 ms worth;
    it returns how many it queued (fewer when librdkafka's queue is full). Returns
    (records sent, start, end). Falls behind rather than bursting if the client cannot keep up:
    the achieved rate is reported next to the asked one."""
    rate, seconds = p["rate"], p["seconds"]
    most = max(1, int(rate / 200))
    total = int(seconds * rate)
    t0 = time.monotonic()
    deadline, sent = t0 + seconds, 0
    while True:
        now = time.monotonic()
        if now >= deadline:
            break
        due = min(int((now - t0) * rate) + 1, total)
        if due > sent:
            sent += produce_burst(sent, min(due - sent, most))
        poll(0)
        if sent >= due:
            time.sleep(max(0.0, min(0.001, t0 + (sent + 1) / rate - time.monotonic())))
    return sent, t0, time.monotonic()


def _producer(p: dict, errors: list[str]):
    from confluent_kafka import Producer

    return Producer({
        "bootstrap.servers": p["bootstrap"], "acks": p.get("acks", 1), "compression.type": "none",
        "linger.ms": p["linger_ms"], "batch.size": p["batch_bytes"], "batch.num.messages": 1_000_000,
        "queue.buffering.max.messages": 10_000_000, "queue.buffering.max.kbytes": 1 << 20,
        "error_cb": lambda err: errors.append(str(err)), **p.get("client_config", {}),
    })


def paced_produce_worker(p: dict, ready, go, out) -> None:
    _pin(p["cpus"])
    client_errors: list[str] = []
    failures: list[str] = []
    latencies: list[float] = []

    def on_sampled(err, msg):
        if err is not None:
            failures.append(str(err))
        else:
            latencies.append(msg.latency())

    windows: list[dict] = []
    producer = _producer({**p, "client_config": {**p.get("client_config", {}), "stats_cb": _stats_windows(windows),
                                                 "statistics.interval.ms": STATS_INTERVAL_MS}}, client_errors)
    topic, value, partition = p["topic"], os.urandom(p["value_size"]), p["partition"]
    nparts = p.get("partitions", 1)
    producer.produce(topic, value, partition=partition if partition is not None else 0, on_delivery=on_sampled)
    if producer.flush(30) or failures:
        raise PhaseError(f"warm-up record not acknowledged: {failures[:3] or 'timeout'}")
    latencies.clear()
    windows.clear()
    ready.put(os.getpid())
    go.wait(60)

    every = max(1, p["sample_every"])
    produce = producer.produce

    def burst(first: int, n: int) -> int:
        # One tight loop per pass: at 500k records/s the generator's own CPU is the limit.
        # Records go round-robin over the partitions (with a fixed partition: that one), so
        # every partition sees the same rate, as from many keyed producers.
        i = first
        try:
            for i in range(first, first + n):
                part = partition if partition is not None else i % nparts
                if i % every:
                    produce(topic, value, partition=part)
                else:
                    produce(topic, value, partition=part, on_delivery=on_sampled)
        except BufferError:  # queue full: the records from i on go in a later pass
            return i - first
        return n

    cpu0 = _cpu_self()
    with _collector_off():
        sent, t0, t_end = _paced_loop(p, burst, producer.poll)
        left = producer.flush(p["flush_timeout"])
    t1, cpu1 = time.monotonic(), _cpu_self()
    out.put({"worker": os.getpid(), "sent": sent, "unacked": left, "failed": len(failures),
             "acked": sent - left - len(failures), "warmup_acked": 1, "t0": t0, "t1": t1,
             "send_seconds": t_end - t0, "latencies_s": latencies, "errors": failures[:5],
             "client_errors": client_errors[:5], "client_cpu_s": cpu1 - cpu0, "p99_split": p99_split(windows)})


def e2e_produce_worker(p: dict, ready, go, out) -> None:
    _pin(p["cpus"])
    client_errors: list[str] = []
    producer = _producer(p, client_errors)
    topic, partition = p["topic"], p["partition"]
    pad = os.urandom(max(0, p["value_size"] - _STAMP.size))
    producer.produce(topic, _STAMP.pack(0) + pad, partition=partition)  # connect; consumers skip it
    if producer.flush(30):
        raise PhaseError("warm-up record not acknowledged")
    ready.put(os.getpid())
    go.wait(60)
    pack, ns, produce = _STAMP.pack, time.monotonic_ns, producer.produce
    cpu0 = _cpu_self()

    def burst(first: int, n: int) -> int:
        for done in range(n):
            try:
                produce(topic, pack(ns()) + pad, partition=partition)
            except BufferError:
                return done
        return n

    with _collector_off():
        sent, t0, t_end = _paced_loop(p, burst, producer.poll)
        left = producer.flush(p["flush_timeout"])
    out.put({"worker": os.getpid(), "role": "producer", "sent": sent, "unacked": left, "t0": t0,
             "t1": time.monotonic(), "send_seconds": t_end - t0, "client_errors": client_errors[:5],
             "client_cpu_s": _cpu_self() - cpu0})


def e2e_consume_worker(p: dict, ready, go, out) -> None:
    _pin(p["cpus"])
    from confluent_kafka import OFFSET_END, Consumer, TopicPartition

    client_errors: list[str] = []
    consumer = Consumer({
        "bootstrap.servers": p["bootstrap"], "group.id": f"twinlog-bench-e2e-{os.getpid()}",
        "enable.auto.commit": False, "enable.partition.eof": False, "fetch.wait.max.ms": 100,
        "fetch.min.bytes": 1, "error_cb": lambda err: client_errors.append(str(err)),
        **p.get("client_config", {}),
    })
    consumer.assign([TopicPartition(p["topic"], p["partition"], OFFSET_END)])
    consumer.consume(num_messages=1, timeout=1.0)  # connect, resolve the end offset, start fetching
    ready.put(os.getpid())
    go.wait(60)
    every = max(1, p["sample_every"])
    unpack, ns = _STAMP.unpack_from, time.monotonic_ns
    latencies: list[float] = []
    seen = 0
    deadline = time.monotonic() + p["seconds"] + p["drain_s"]
    with _collector_off():
        while time.monotonic() < deadline and seen < p["expected"]:
            msgs = consumer.consume(num_messages=1000, timeout=0.05)
            now = ns()
            for m in msgs:
                if m.error() is not None:
                    raise PhaseError(f"consumer error: {m.error()}")
            stamps = [s for s in (unpack(m.value())[0] for m in msgs) if s > 0]  # the warm-up has stamp 0
            seen += len(stamps)
            latencies.extend((now - s) / 1e9 for s in stamps[::every])
    consumer.close()
    out.put({"worker": os.getpid(), "role": "consumer", "consumed": seen, "latencies_s": latencies,
             "t1": time.monotonic(), "client_errors": client_errors[:5]})
