"""A set of partitions keyed by topic id, as KIP-848 names them on the wire and in the log.

An `Assignment` maps a topic id to the partition indexes of that topic; a topic with no
partitions is left out, so two assignments holding the same partitions compare equal. They
are treated as values: every operation here returns a new mapping.
"""

from __future__ import annotations

import uuid
from typing import Iterable, Mapping

Assignment = Mapping[uuid.UUID, frozenset[int]]
EMPTY: Assignment = {}


def of(pairs: Iterable[tuple[uuid.UUID, int]]) -> dict[uuid.UUID, frozenset[int]]:
    """From (topic id, partition) pairs."""
    out: dict[uuid.UUID, set[int]] = {}
    for topic_id, partition in pairs:
        out.setdefault(topic_id, set()).add(partition)
    return {t: frozenset(ps) for t, ps in out.items()}


def pairs(a: Assignment) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, ps in a.items() for p in ps}


def size(a: Assignment) -> int:
    return sum(len(ps) for ps in a.values())


def union(a: Assignment, b: Assignment) -> dict[uuid.UUID, frozenset[int]]:
    return of(pairs(a) | pairs(b))


def minus(a: Assignment, b: Assignment) -> dict[uuid.UUID, frozenset[int]]:
    return of(pairs(a) - pairs(b))


def intersects(a: Assignment, b: Assignment) -> bool:
    return any(ps & b.get(t, frozenset()) for t, ps in a.items())


def is_subset(a: Assignment, b: Assignment) -> bool:
    return all(ps <= b.get(t, frozenset()) for t, ps in a.items())


def normal(a: Assignment) -> dict[uuid.UUID, frozenset[int]]:
    """The same partitions with empty topics dropped (what the wire may carry)."""
    return {t: frozenset(ps) for t, ps in a.items() if ps}
