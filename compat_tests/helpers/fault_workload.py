"""The fault suite's workload: idempotent acks=all producers and a consumer, each on a thread,
recording what the cluster acknowledged and what it served, with the time of each (and the
transactional writer and read_committed reader of fault_txn_workload.py).

Every value says who wrote it and in which order: b"w<writer>-p<partition>-<seq>", the
sequence counting up per writer and partition from 0. The checker (fault_checker.py) needs no
other bookkeeping to find a lost, duplicated or reordered record, or a read of one that is not
in the final log.
"""

from __future__ import annotations

import re
import threading
import time
from collections import defaultdict
from dataclasses import dataclass

from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.admin import NewTopic

from compat_tests.helpers.cluster import Cluster
from compat_tests.helpers.fault_txn_workload import TxnWriter
from compat_tests.helpers.topics import unique_topic

VALUE = re.compile(rb"w(\d+)-p(\d+)-(\d+)")
IN_FLIGHT_LIMIT = 3000


def parse_value(value: bytes) -> tuple[int, int, int]:
    """(writer, partition, seq) of a workload value."""
    match = VALUE.fullmatch(value)
    assert match, f"not a workload value: {value!r}"
    return tuple(int(g) for g in match.groups())


@dataclass(frozen=True)
class Ack:
    at: float  # time.monotonic() of the delivery report
    # None when librdkafka reports a delivery without an offset (seen in the random schedules,
    # after requests timed out around a pause: the broker's answer carrying it never arrived)
    offset: int | None
    value: bytes


def create_spread_topic(cluster: Cluster, leaders: list[int], min_isr: int = 2) -> str:
    """An RF=3 topic whose partition i is led by leaders[i] with a whole ISR."""
    topic = unique_topic("netfault")
    nodes = sorted(cluster.brokers)
    assignment = {i: [lead, *[n for n in nodes if n != lead]] for i, lead in enumerate(leaders)}
    admin = cluster.admin()
    try:
        admin.create_topics([NewTopic(topic, replica_assignments=assignment,
                                      topic_configs={"min.insync.replicas": str(min_isr)})])
    finally:
        admin.close()
    cluster.wait_for(lambda md: all(md["topics"].get(topic, {}).get(i, {}).get("leader") == lead
                                    and len(md["topics"][topic][i]["isr"]) == 3 for i, lead in enumerate(leaders)),
                     f"{topic} led as assigned with whole ISRs")
    return topic


class AckRecorder:
    """An acks=all producer (idempotent unless told) writing to every partition of a topic from
    a thread, recording when each record was acknowledged and at which offset."""

    def __init__(self, cluster: Cluster, topic: str, partitions: int, idempotent: bool = True,
                 writer: int = 0) -> None:
        self.topic = topic
        self.partitions = partitions
        self.writer = writer
        self.acks: dict[int, list[Ack]] = defaultdict(list)
        self.errors: list[str] = []
        self._producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                                   "enable.idempotence": idempotent, "linger.ms": 5,
                                   "request.timeout.ms": 2000, "message.timeout.ms": 120000,
                                   "retry.backoff.ms": 50, "retry.backoff.max.ms": 200,
                                   "topic.metadata.refresh.interval.ms": 1000})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "AckRecorder":
        self._thread.start()
        return self

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acks[msg.partition()].append(Ack(time.monotonic(), msg.offset(), msg.value()))
        else:
            self.errors.append(f"{msg.partition()}: {err}")

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            for p in range(self.partitions):
                if len(self._producer) < IN_FLIGHT_LIMIT:
                    self._producer.produce(self.topic, value=b"w%d-p%d-%d" % (self.writer, p, n), partition=p,
                                           on_delivery=self._delivered)
            n += 1
            self._producer.poll(0.02)

    def stop(self) -> None:
        """Stop producing and wait for every record's outcome."""
        self._stop.set()
        self._thread.join(10)
        left = self._producer.flush(120)
        assert left == 0, f"writer {self.writer}: {left} records never acknowledged"

    def close(self) -> None:
        """Stop producing and drop what is unsent (a failed test's producer must not outlive
        its cluster: the next one may get the same addresses)."""
        self._stop.set()
        self._thread.join(10)
        self._producer.purge()
        self._producer.flush(0)
        self._producer.close()  # its delivery callback holds it in a cycle the collector frees late

    def longest_gap(self, partition: int, start: float, end: float) -> float:
        """The longest time within [start, end] without an ack on `partition`."""
        return longest_gap([a.at for a in self.acks[partition]], start, end)

    def first_ack_after(self, partition: int, since: float) -> float | None:
        return next((a.at - since for a in self.acks[partition] if a.at > since), None)


def longest_gap(times: list[float], start: float, end: float) -> float:
    inside = [start, *sorted(t for t in times if start < t < end), end]
    return max(b - a for a, b in zip(inside, inside[1:]))


class Reader:
    """A consumer at one isolation level reading every partition from offset 0 on a thread while
    the faults happen, recording (partition, offset, value) of each record it was served."""

    def __init__(self, cluster: Cluster, topic: str, partitions: int,
                 isolation: str = "read_uncommitted") -> None:
        self.reads: list[tuple[int, int, bytes]] = []
        self.errors: list[str] = []
        self._consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"{isolation}-reader-{topic}",
                                   "enable.auto.commit": False, "isolation.level": isolation,
                                   "topic.metadata.refresh.interval.ms": 1000})
        self._consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Reader":
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            msg = self._consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is None:
                self.reads.append((msg.partition(), msg.offset(), msg.value()))
            elif not msg.error().retriable() and msg.error().fatal():
                self.errors.append(str(msg.error()))

    def close(self) -> None:
        if not self._stop.is_set():  # idempotent: Workload.stop and close may both end it
            self._stop.set()
            self._thread.join(10)
            self._consumer.close()


class Workload:
    """`writers` idempotent acks=all producers over every partition and one Reader; beside
    them a transactional writer (its aborts drawn from `txn_seed`) and a read_committed reader
    (fault_txn_workload.py)."""

    def __init__(self, cluster: Cluster, topic: str, partitions: int, writers: int = 3, txn_seed: int = 0) -> None:
        self.partitions = partitions
        self.producers = [AckRecorder(cluster, topic, partitions, writer=w) for w in range(writers)]
        self.reader = Reader(cluster, topic, partitions)
        self.txn_writer = TxnWriter(cluster, topic, partitions, txn_seed)
        self.committed_reader = Reader(cluster, topic, partitions, "read_committed")

    def start(self) -> "Workload":
        for p in self.producers:
            p.start()
        self.txn_writer.start()
        self.reader.start()
        self.committed_reader.start()
        return self

    def acks(self, partition: int) -> list[Ack]:
        return [a for p in self.producers for a in p.acks[partition]]

    def errors(self) -> list[str]:
        """Every failure a client reported but the transactional writer's (an error there makes
        a transaction unknown, which the checker allows)."""
        return [e for p in self.producers for e in p.errors] + self.reader.errors + self.committed_reader.errors

    def every_partition_acked(self) -> bool:
        return all(self.acks(p) for p in range(self.partitions))

    def longest_gap(self, partition: int, start: float, end: float) -> float:
        """Over every writer: the longest time without any ack on `partition`."""
        return longest_gap([a.at for a in self.acks(partition)], start, end)

    def stop(self) -> None:
        """Every producer's records acknowledged or failed, the last transaction ended; the
        readers stopped."""
        try:
            for p in self.producers:
                p.stop()
            self.txn_writer.stop()
        finally:
            self.reader.close()
            self.committed_reader.close()

    def close(self) -> None:
        for p in self.producers:
            p.close()
        self.txn_writer.close()
        self.reader.close()
        self.committed_reader.close()
