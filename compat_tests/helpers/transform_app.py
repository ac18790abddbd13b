"""A consume-transform-produce application on confluent-kafka, written the way Kafka's
exactly-once pattern has it: a consumer of a group (read_committed, no auto-commit) and a
transactional producer; each batch it polls is transformed into the output topic and the batch's
next offsets go to the same transaction (send_offsets_to_transaction with the consumer's group
metadata), so the output and the input position commit or abort together.

An application that aborts, or dies, starts again from the group's committed offsets with a
fresh consumer (a new assignment) and a producer of the same transactional id, whose
init_transactions fences the old one and aborts whatever it left open. `committed_output` and
`assert_exactly_once` read the result as a downstream read_committed consumer would.
"""

from __future__ import annotations

import time
from collections import Counter

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from compat_tests.helpers.group_requests import fetch_committed
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.txn_offsets import UNSTABLE_OFFSET_COMMIT, stable_fetch
from compat_tests.helpers.waiting import wait_until

TXN_TIMEOUT_S = 60
SESSION_TIMEOUT_MS = 6000  # the broker's group.min.session.timeout.ms


def transformed(value: bytes) -> bytes:
    return b"out:" + value


class TransformApp:
    """Reads `source` in group `group`, writes `sink` as transactional id `tid`; an input
    record's output goes to the same partition number."""

    def __init__(self, bootstrap: str, tid: str, group: str, source: str, sink: str) -> None:
        self.source, self.sink = source, sink
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": f"ctp-{tid}",
            "isolation.level": "read_committed", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": 1000})
        self.consumer.subscribe([source])
        self.producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                                  "client.id": f"ctp-{tid}", "transaction.timeout.ms": TXN_TIMEOUT_S * 1000})
        self.producer.init_transactions(TXN_TIMEOUT_S)

    def poll(self, count: int, timeout: float = 30.0) -> list:
        """`count` records, or what came within `timeout`; it waits out the first assignment,
        which a new group member gets only after a rebalance."""
        got, deadline = [], time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            for msg in self.consumer.consume(num_messages=count - len(got), timeout=0.5):
                if msg.error():
                    assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                    continue
                got.append(msg)
        return got

    def process(self, batch: list, end: str) -> None:
        """One transaction: the batch's outputs and its next offsets; `end` is commit, abort or
        open (sent and flushed, then left open, as by an application that died)."""
        self.producer.begin_transaction()
        for msg in batch:
            self.producer.produce(self.sink, key=msg.key(), value=transformed(msg.value()), partition=msg.partition())
        self.producer.send_offsets_to_transaction(next_offsets(batch), self.consumer.consumer_group_metadata(),
                                                  TXN_TIMEOUT_S)
        if end == "commit":
            self.producer.commit_transaction(TXN_TIMEOUT_S)
        elif end == "abort":
            self.producer.flush(TXN_TIMEOUT_S)
            self.producer.abort_transaction(TXN_TIMEOUT_S)
        else:
            assert end == "open", end
            assert self.producer.flush(TXN_TIMEOUT_S) == 0

    def committed(self, partitions: int) -> dict[int, int]:
        """The group's committed input offsets (-1: none); a read_committed consumer asks for
        stable offsets, so one a transaction still holds is waited for."""
        got = self.consumer.committed([TopicPartition(self.source, p) for p in range(partitions)], timeout=60)
        return {tp.partition: tp.offset if tp.offset >= 0 else -1 for tp in got}

    def close_consumer(self) -> None:
        """Leave the group, so the next instance gets the partitions without a session timeout."""
        self.consumer.close()


def next_offsets(batch: list) -> list[TopicPartition]:
    """The position after the batch in each partition it read: what the transaction commits."""
    ends: dict[tuple[str, int], int] = {}
    for msg in batch:
        key = (msg.topic(), msg.partition())
        ends[key] = max(ends.get(key, 0), msg.offset() + 1)
    return [TopicPartition(t, p, o) for (t, p), o in sorted(ends.items())]


def partition_output(bootstrap: str, topic: str, partition: int, isolation: str, timeout: float = 60.0) -> list[bytes]:
    """Every value of a partition a consumer of `isolation` reads until its EOF reaches the high
    watermark (for read_committed: once no transaction holds the partition's LSO back)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctp-reader", "client.id": "ctp-reader",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, partition, 0)])
    got, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), cached=False)
                if msg.offset() >= high:
                    return got
                continue
            got.append(msg.value())
        raise AssertionError(f"{topic}-{partition} ({isolation}): never reached the high watermark; got {got}")
    finally:
        consumer.close()


def assert_exactly_once(bootstrap: str, sink: str, partitions: int, inputs: dict[int, list[bytes]]) -> None:
    """The committed output of each partition is its input transformed, each record once, in order."""
    for p in range(partitions):
        out = partition_output(bootstrap, sink, p, "read_committed")
        twice = [v for v, n in Counter(out).items() if n > 1]
        assert not twice, f"partition {p}: output twice: {twice}"
        assert out == [transformed(v) for v in inputs[p]], f"partition {p}: {out}"


def group_offsets(broker, group: str, source: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets of the input (-1: none), as OffsetFetch answers them."""
    with Client.to(broker) as c:
        got = fetch_committed(c, group, [(source, p) for p in range(partitions)])
    return {p: offset for (_, p), (offset, _) in got.items()}


def settled_group_offsets(broker, group: str, source: str, partitions: int) -> dict[int, int]:
    """The committed offsets once no transaction holds one pending: EndTxn answers before its
    markers reach `__consumer_offsets`, so a just-ended transaction's offsets may still be."""
    wanted = [(source, p) for p in range(partitions)]

    def stable():
        with Client.to(broker) as c:
            got = stable_fetch(c, group, wanted)
        if any(code == UNSTABLE_OFFSET_COMMIT for _, code in got.values()):
            return None
        return {p: offset for (_, p), (offset, _) in got.items()}
    return wait_until(stable, what="the transaction's offsets settled", timeout=30)
