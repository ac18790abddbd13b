"""Where a replica lives (its log dir, its files) and AlterReplicaLogDirs, with a load running during a move."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from compat_tests.helpers.raw_kafka import Client, make_batch

NONE, UNKNOWN_TOPIC_OR_PARTITION, LOG_DIR_NOT_FOUND = 0, 3, 57
ALTER_DIRS, DESCRIBE_DIRS = 34, 35


def other(mode: str) -> str:
    return "commitlog" if mode == "segment" else "segment"


def dir_of(broker, mode: str) -> str:
    data = Path(broker.data_dir).resolve()
    return str(data / "commitlog-store" if mode == "commitlog" else data)


def files_of(broker, topic: str) -> dict[str, bool]:
    data = Path(broker.data_dir)
    return {"segment": (data / f"{topic}-0").is_dir(),
            "commitlog": (data / "commitlog-store" / "consumequeue" / topic / "0").is_dir()}


def alter(c: Client, path: str, topic: str, partitions=(0,), version: int = 2) -> dict[int, int]:
    r = c.request(ALTER_DIRS, version, dirs=[{"path": path, "topics": [{"name": topic, "partitions": list(partitions)}]}])
    (t,) = r.results
    assert t.topic_name == topic
    return {p.partition_index: p.error_code for p in t.partitions}


def placement(c: Client, topic: str) -> dict[tuple[str, bool], int]:
    """(log dir, is_future) -> offset lag of partition 0 of `topic`, as DescribeLogDirs lists it."""
    r = c.request(DESCRIBE_DIRS, 4, topics=[{"topic": topic, "partitions": [0]}])
    return {(res.log_dir, p.is_future_key): p.offset_lag
            for res in r.results for t in res.topics if t.name == topic for p in t.partitions}


class IdempotentLoad:
    """An idempotent acks=all confluent-kafka producer in a thread; keeps what was acknowledged.
    `pause_s` between records paces it (a cluster's followers must keep up on two cores)."""

    def __init__(self, bootstrap: str, topic: str, tag: str, pause_s: float = 0.0):
        self._pause_s = pause_s
        self.acked: list[tuple[int, bytes]] = []
        self._stop, self._lock = threading.Event(), threading.Lock()
        self._rnd, self._topic, self._tag = random.Random(tag), topic, tag
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                   "linger.ms": 2, "message.timeout.ms": 10000, "log_level": 2,
                                   "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200})
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, err, msg):
        if err is None:
            with self._lock:
                self.acked.append((msg.offset(), msg.value()))

    def _run(self):
        seq = 0
        while not self._stop.is_set():
            value = f"{self._tag}-{seq:08d}-".encode() + self._rnd.randbytes(self._rnd.randrange(100, 2000))
            try:
                self._producer.produce(self._topic, value=value, partition=0, on_delivery=self._delivered)
                seq += 1
            except BufferError:
                self._producer.poll(0.01)
            self._producer.poll(0)
            if self._pause_s:
                time.sleep(self._pause_s)  # pacing: a load of the rate the caller chose

    def count(self) -> int:
        with self._lock:
            return len(self.acked)

    def finish(self, killed: bool = False) -> list[tuple[int, bytes]]:
        self._stop.set()
        self._thread.join(10)
        if killed:
            self._producer.purge(in_queue=True, in_flight=True, blocking=False)
        self._producer.flush(20)
        self._producer = None
        return sorted(self.acked)


def prefill(c: Client, topic: str, megabytes: int) -> int:
    """Batches of 64 KiB of records: the move has that much to copy before it can swap."""
    value = bytes(range(256)) * 16
    n = 0
    for _ in range(megabytes * 16):
        assert c.produce(topic, 0, make_batch([value] * 16)).error_code == NONE
        n += 16
    return n
