"""The tasks a streams member holds or is to hold: active, standby and warm-up, each a map from
subtopology id to partition (task) numbers. Kept as values: a map has no empty entries, so two
holding the same tasks compare equal. The set operations are the consumer groups' own
(topic_partitions.py), keyed here by subtopology id instead of topic id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.groups.consumer import topic_partitions as tp

TaskMap = dict[str, frozenset[int]]
KINDS = ("active", "standby", "warmup")


@dataclass(frozen=True)
class Tasks:
    active: TaskMap = field(default_factory=dict)
    standby: TaskMap = field(default_factory=dict)
    warmup: TaskMap = field(default_factory=dict)

    def of(self, kind: str) -> TaskMap:
        return getattr(self, kind)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def union(self, other: Tasks) -> Tasks:
        return Tasks(*(tp.union(self.of(k), other.of(k)) for k in KINDS))

    def intersects(self, other: Tasks) -> bool:
        return any(tp.intersects(self.of(k), other.of(k)) for k in KINDS)

    def is_subset(self, other: Tasks) -> bool:
        return all(tp.is_subset(self.of(k), other.of(k)) for k in KINDS)


EMPTY = Tasks()


def normal(tasks: Tasks) -> Tasks:
    return Tasks(*(tp.normal(tasks.of(k)) for k in KINDS))


def of_pairs(pairs) -> TaskMap:
    return tp.of(pairs)


def pairs(tasks: TaskMap) -> set[tuple[str, int]]:
    return tp.pairs(tasks)
