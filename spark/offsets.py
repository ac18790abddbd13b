"""Partition offsets as the connector writes them, offset ranges, and its per-trigger rate limit.

A streaming checkpoint stores each micro-batch's end offsets. Spark's Kafka connector writes them
as `{"topicA":{"0":23,"1":-1}}` (KafkaSourceOffset / JsonUtils.partitionOffsets: topics and
partitions in sorted order); the Python Data Source API stores whatever dict `latestOffset`
returns as JSON, so returning exactly that shape makes the checkpoint's offsets files read the
same as the connector's. Everything here is pure data: no clients, no Spark.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from pyspark.sql.datasource import InputPartition

TopicPartition = tuple[str, int]
PartitionOffsets = dict[TopicPartition, int]

LONG_MAX = (1 << 63) - 1


def to_json_dict(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """{(t, p): o} -> {"t": {"p": o}}, topics and partitions sorted like the connector's JsonUtils."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition) in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = int(offsets[(topic, partition)])
    return out


def from_json_dict(data: Mapping[str, Mapping[str, int]]) -> PartitionOffsets:
    return {(topic, int(p)): int(o) for topic, parts in data.items() for p, o in parts.items()}


@dataclass(frozen=True)
class KafkaOffsetRange(InputPartition):
    """One Spark input partition: offsets [start, end) of one Kafka partition.

    start may be -2 (earliest) for a partition the driver found after the range was planned:
    the executor resolves it, as the connector does for partitions added during a query.
    """

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start) if self.start >= 0 else 0


def offset_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                  new_partition_start: int = -2) -> list[KafkaOffsetRange]:
    """One range per partition of `end`, in (topic, partition) order; empty ranges are dropped.

    A partition missing from `start` was created after `start` was taken: read it from its start.
    """
    ranges = []
    for tp in sorted(end):
        begin = start.get(tp, new_partition_start)
        stop = end[tp]
        if begin >= 0 and stop <= begin:
            continue
        ranges.append(KafkaOffsetRange(tp[0], tp[1], begin, stop))
    return ranges


def _divided(r: KafkaOffsetRange, parts: int) -> list[KafkaOffsetRange]:
    if parts <= 1 or r.size <= 1:
        return [r]
    bounds = [r.start + int(r.size * (i / parts)) for i in range(parts)] + [r.end]
    return [KafkaOffsetRange(r.topic, r.partition, a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def split_ranges(ranges: list[KafkaOffsetRange], min_partitions: int | None,
                 max_records: int | None) -> list[KafkaOffsetRange]:
    """KafkaOffsetRangeCalculator: cut ranges into more Spark partitions.

    maxRecordsPerPartition first cuts every range into ceil(size / max) even pieces; then, when
    minPartitions asks for more pieces than there are, each range gets round(its share of all
    records * minPartitions) pieces, at least one. A range whose start is still unresolved (-2)
    has no known size and stays whole.
    """
    if max_records:
        ranges = [piece for r in ranges for piece in _divided(r, math.ceil(r.size / max_records))]
    if not min_partitions or min_partitions <= len(ranges):
        return ranges
    total = sum(r.size for r in ranges)
    if total == 0:
        return ranges
    # Math.round of the connector (half up), not Python's banker's rounding.
    return [piece for r in ranges for piece in _divided(r, max(1, math.floor(r.size / total * min_partitions + 0.5)))]


def rate_limit(limit: int, start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
               new_partition_start: Mapping[TopicPartition, int] | None = None) -> PartitionOffsets:
    """End offsets that read at most about `limit` records, shared by how much each partition has.

    KafkaMicroBatchStream.rateLimit: each partition gets limit * (its size / total size), rounded
    down, except that a share below one record is rounded up so small partitions never starve.
    """
    new_partition_start = new_partition_start or {}
    sizes: dict[TopicPartition, int] = {}
    for tp, stop in latest.items():
        begin = start.get(tp, new_partition_start.get(tp))
        if begin is not None and stop - begin > 0:
            sizes[tp] = stop - begin
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(latest)
    out: PartitionOffsets = {}
    for tp, stop in latest.items():
        if tp not in sizes:
            out[tp] = stop
            continue
        begin = start.get(tp, new_partition_start.get(tp))
        prorate = limit * (sizes[tp] / total)
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        off = LONG_MAX if share > LONG_MAX - begin else begin + share
        out[tp] = min(stop, off)
    return out


def cap(offsets: Mapping[TopicPartition, int], ceiling: Mapping[TopicPartition, int]) -> PartitionOffsets:
    """Each offset no higher than `ceiling`'s for its partition (availableNow's target)."""
    return {tp: min(o, ceiling[tp]) if tp in ceiling else o for tp, o in offsets.items()}


def partitions_of(offsets: Iterable[TopicPartition]) -> list[TopicPartition]:
    return sorted(set(offsets))
