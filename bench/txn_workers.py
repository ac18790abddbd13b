"""Load generators for the transactions benchmark (transactions.py): a confluent-kafka producer
that is idempotent or transactional (a commit every N records, optionally every k-th
transaction aborted), and a consumer that reads a topic once with a given isolation level.

Both run as load_workers.run_phase workers (own process, "ready", then "go").

A transactional record counts only once its transaction's commit_transaction() returned: that
call flushes every record of the transaction and waits for EndTxn, so the figure includes the
AddPartitionsToTxn round trips, the flush at each commit and the coordinator's markers. An
aborted transaction's records are flushed before abort_transaction(), so they are in the log
(read_committed consumers must skip them) rather than purged from the client's queue. The
first byte of every value says which the record belongs to (C or A), so the consumer can prove
a read_committed pass never returned an aborted record.
"""

from __future__ import annotations

import os
import time

from load_workers import PhaseError, _cpu_self, _pin

COMMITTED, ABORTED = b"C", b"A"


def _producer(p: dict):
    from confluent_kafka import Producer

    config = {"bootstrap.servers": p["bootstrap"], "enable.idempotence": True, "acks": "all",
              "compression.type": "none", "linger.ms": p["linger_ms"], "batch.size": 1 << 20,
              "batch.num.messages": 1_000_000, "queue.buffering.max.kbytes": 1 << 20,
              "queue.buffering.max.messages": 10_000_000, "delivery.report.only.error": True,
              "on_delivery": p["_on_failure"], **p.get("client_config", {})}
    if p["txn_records"]:
        config["transactional.id"] = f"bench-{os.getpid()}-{p['topic']}"
    return Producer(config)


def _send(producer, topic: str, value: bytes, kwargs: dict, n: int) -> None:
    produce, poll = producer.produce, producer.poll
    for _ in range(n):
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


def txn_produce_worker(p: dict, ready, go, out) -> None:
    """p: bootstrap, topic, value_size, seconds, txn_records (0: idempotent, no transactions),
    abort_every (0: none; k: every k-th transaction aborted), linger_ms, partition, cpus,
    client_config; "count" caps the records sent (a fill of known size)."""
    _pin(p["cpus"])
    failures: list[str] = []

    def on_failure(err, _msg):
        if len(failures) < 5:
            failures.append(str(err))

    producer = _producer({**p, "_on_failure": on_failure})
    topic, n, abort_every = p["topic"], p["txn_records"], p["abort_every"]
    kwargs = {"partition": p["partition"]} if p["partition"] is not None else {}
    committed_value = COMMITTED + os.urandom(p["value_size"] - 1)
    aborted_value = ABORTED + committed_value[1:]
    if n:
        producer.init_transactions(60)
        producer.begin_transaction()
    _send(producer, topic, committed_value, kwargs, 1)  # warm-up: connections, ids, metadata
    if n:
        producer.commit_transaction(60)
    elif producer.flush(30):
        raise PhaseError("warm-up record not acknowledged")
    if failures:
        raise PhaseError(f"warm-up failed: {failures}")
    ready.put(os.getpid())
    go.wait(60)

    count = p.get("count") or 1 << 62
    step = n or 2000
    committed = aborted = txns = aborted_txns = 0
    commit_s: list[float] = []
    cpu0, t0 = _cpu_self(), time.monotonic()
    deadline = t0 + p["seconds"]
    while committed + aborted < count and time.monotonic() < deadline:
        this = min(step, count - committed - aborted)
        abort = n and abort_every and txns % abort_every == abort_every - 1
        if n:
            producer.begin_transaction()
        _send(producer, topic, aborted_value if abort else committed_value, kwargs, this)
        if not n:
            producer.poll(0)
            committed += this
        elif abort:
            if producer.flush(60):
                raise PhaseError("records of a transaction to abort were not written")
            producer.abort_transaction(60)
            aborted += this
            aborted_txns += 1
        else:
            c0 = time.monotonic()
            producer.commit_transaction(60)
            commit_s.append(time.monotonic() - c0)
            committed += this
        txns += bool(n)
        if failures:
            break
    left = 0 if n else producer.flush(p.get("flush_timeout", 60))
    t1, cpu1 = time.monotonic(), _cpu_self()
    if failures or left:
        raise PhaseError(f"{left} unacknowledged, failures: {failures}")
    out.put({"worker": os.getpid(), "committed": committed, "aborted": aborted, "txns": txns,
             "aborted_txns": aborted_txns, "warmup": 1, "bytes": committed * len(committed_value),
             "t0": t0, "t1": t1, "client_cpu_s": cpu1 - cpu0, "commit_s": commit_s})


def isolation_consume_worker(p: dict, ready, go, out) -> None:
    """Read `p["ranges"]` ({partition: [low, high)}) once with p["isolation"]; stop after
    p["expected"] records (what that isolation level must return) or at the deadline."""
    _pin(p["cpus"])
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": p["bootstrap"], "group.id": f"twinlog-bench-{os.getpid()}",
        "enable.auto.commit": False, "enable.auto.offset.store": False, "enable.partition.eof": False,
        "isolation.level": p["isolation"], "fetch.max.bytes": p["fetch_bytes"],
        "max.partition.fetch.bytes": p["fetch_bytes"], "receive.message.max.bytes": p["fetch_bytes"] + (1 << 20),
        "queued.max.messages.kbytes": 65536, "fetch.wait.max.ms": 100, "check.crcs": False,
    })
    consumer.list_topics(p["topic"], timeout=30)
    ranges = {int(k): v for k, v in p["ranges"].items()}
    ready.put(os.getpid())
    go.wait(60)

    cpu0, t0 = _cpu_self(), time.monotonic()
    consumer.assign([TopicPartition(p["topic"], part, lo) for part, (lo, hi) in ranges.items() if hi > lo])
    seen = nbytes = aborted_seen = 0
    deadline = t0 + p["seconds"]
    while seen < p["expected"] and time.monotonic() < deadline:
        for m in consumer.consume(num_messages=256, timeout=0) or consumer.consume(num_messages=1, timeout=0.5):
            if m.error() is not None:
                raise PhaseError(f"consumer error: {m.error()}")
            value = m.value()
            aborted_seen += value[:1] == ABORTED
            seen += 1
            nbytes += len(value)
    t1, cpu1 = time.monotonic(), _cpu_self()
    consumer.close()
    out.put({"worker": os.getpid(), "consumed": seen, "aborted_seen": aborted_seen, "bytes": nbytes,
             "t0": t0, "t1": t1, "client_cpu_s": cpu1 - cpu0})
