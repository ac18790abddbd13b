"""Which partitions changed since a periodic task last looked, so idle work follows changes, not
partitions.

The broker's periodic tasks that would otherwise visit every hosted partition each round (the
flush.ms schedule every second, producer-state snapshots every 10 s) each hold a `Changed` of
their own. Every change to a partition's log (an append as leader or follower, a marker, a
truncation, a log-dir swap: replica_log.py) is told to the feed, which adds the partition to
each `Changed`; a task takes what gathered since its last round and visits those alone. Measured
before this (issue 38): a broker holding 10,000 idle partitions spent 3.25 % of a core walking
them; one with none spends 0.37 %.

A partition is also told once when it is hosted (Partition's constructor), so the first round
of each task after a start, a creation or a move sees it as before.
"""

from __future__ import annotations

from typing import Generic, Hashable, TypeVar

P = TypeVar("P", bound=Hashable)


class Changed(Generic[P]):
    """One task's partitions changed since it last took them, in the order they changed."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: dict[P, None] = {}  # a dict: ordered, each partition once

    def add(self, partition: P) -> None:
        self._pending[partition] = None

    def take(self) -> list[P]:
        """Everything changed since the last take; starts gathering again."""
        taken, self._pending = list(self._pending), {}
        return taken

    def discard(self, partition: P) -> None:
        self._pending.pop(partition, None)

    def __len__(self) -> int:
        return len(self._pending)


class ChangeFeed(Generic[P]):
    """The broker's one feed: each change goes to every task's `Changed`."""

    def __init__(self) -> None:
        self._subscribers: list[Changed[P]] = []

    def subscribe(self) -> Changed[P]:
        changed: Changed[P] = Changed()
        self._subscribers.append(changed)
        return changed

    def changed(self, partition: P) -> None:
        for subscriber in self._subscribers:
            subscriber.add(partition)

    def forget(self, partition: P) -> None:
        """No longer hosted (its topic deleted, its replica removed here): no task visits its
        log, whose files are being retired, once it is gone."""
        for subscriber in self._subscribers:
            subscriber.discard(partition)
