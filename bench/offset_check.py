"""How many records the broker really holds: the check behind every produce figure.

A produce run counts what librdkafka says was acknowledged; this module asks the broker. It
reads each partition's watermarks (ListOffsets) and then reads the tail back: a consumer
assigned at high watermark - 1 receives the whole last batch, and the last offset it sees + 1
is the partition's true end. The two agree on a broker that keeps Kafka's rules. They need not
on a peer: Tansu 0.6.0 answers ListOffsets(latest) with the last batch's *base* offset + 1
(found by this benchmark; e.g. 10 records in one batch after 2 singles give 3, not 12), so
its counts rest on the read-back, and the watermark disagreement is reported as a note.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class PartitionEnd:
    low: int
    high_watermark: int
    end: int  # last offset read back + 1 (== low when the partition is empty)


def partition_ends(bootstrap: str, topic: str, partitions: int, idle_s: float = 0.5,
                   timeout_s: float = 30.0) -> dict[int, PartitionEnd]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "twinlog-bench-offset-check",
                  "enable.auto.commit": False, "enable.auto.offset.store": False,
                  "fetch.max.bytes": 64 << 20, "max.partition.fetch.bytes": 64 << 20,
                  "receive.message.max.bytes": 65 << 20})
    try:
        marks = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
                 for p in range(partitions)}
        ends = {}
        for p, (low, high) in marks.items():
            if high <= low:
                ends[p] = PartitionEnd(low, high, low)
                continue
            c.assign([TopicPartition(topic, p, high - 1)])
            last, quiet_since, deadline = None, time.monotonic(), time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                for m in c.consume(num_messages=100_000, timeout=0.1):
                    if m.error() is None:
                        last = max(last or -1, m.offset())
                        quiet_since = time.monotonic()
                if last is not None and time.monotonic() - quiet_since >= idle_s:
                    break
            c.unassign()
            if last is None:
                raise RuntimeError(f"{topic}[{p}]: nothing could be read at high watermark - 1 = {high - 1}")
            ends[p] = PartitionEnd(low, high, last + 1)
        return ends
    finally:
        c.close()


def total(ends: dict[int, PartitionEnd]) -> int:
    return sum(e.end for e in ends.values())


def watermark_disagreement(ends: dict[int, PartitionEnd]) -> str | None:
    bad = {p: (e.high_watermark, e.end) for p, e in ends.items() if e.high_watermark != e.end}
    if not bad:
        return None
    return ", ".join(f"partition {p}: high watermark {hw:,}, records end at {end:,}" for p, (hw, end) in bad.items())
