"""A streams group's topology and how it meets the broker's topics (Kafka's InternalTopicManager).

A member joining sends its application's topology: subtopologies, each reading source topics
(the user's) and repartition topics (internal, written by another subtopology), and keeping
its state in changelog topics (internal). The coordinator configures it against the topics
that exist now:

1. every user source topic must exist, else MISSING_SOURCE_TOPICS;
2. a repartition topic without a fixed partition count gets the largest count among the
   source topics of the subtopologies writing to it (repeated until all are known; a cycle
   that never resolves is STREAMS_INVALID_TOPOLOGY);
3. topics a subtopology declares copartitioned must agree: the flexible repartition topics
   among them take the count of the fixed ones (INCORRECTLY_PARTITIONED_TOPICS if those differ);
4. a subtopology has one task per partition of its widest source; its changelog topics have
   that many partitions;
5. internal topics that do not exist yet are to be created (MISSING_INTERNAL_TOPICS until they
   are); one that exists with another partition count is INCORRECTLY_PARTITIONED_TOPICS.

The topology is ready (tasks can be assigned) when none of those statuses applies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

# StreamsGroupHeartbeatResponse.Status codes
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4


class InvalidTopology(Exception):
    """STREAMS_INVALID_TOPOLOGY: the topology can never be configured as sent."""


@dataclass(frozen=True)
class TopicInfo:
    """An internal topic as the topology declares it (partitions 0: derived here)."""

    name: str
    partitions: int = 0
    replication_factor: int = 0  # 0: the broker's default
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[frozenset[str], ...] = ()  # topic names

    @property
    def stateful(self) -> bool:
        """Only tasks keeping state get standbys (their changelogs are what a standby replays)."""
        return bool(self.changelog_topics)

    def user_sources(self) -> tuple[str, ...]:
        internal = {t.name for t in self.repartition_source_topics}
        return tuple(t for t in self.source_topics if t not in internal)


@dataclass(frozen=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]  # by id

    def internal_topics(self) -> list[TopicInfo]:
        return [t for s in self.subtopologies for t in (*s.repartition_source_topics, *s.changelog_topics)]


@dataclass(frozen=True)
class ConfiguredTopology:
    """The topology against the topics as they are: tasks per subtopology (None: not ready),
    why not ready (a Status code and detail), and the internal topics to create."""

    tasks: dict[str, int] | None
    status: tuple[int, str] | None = None
    partitions: dict[str, int] = field(default_factory=dict)  # every internal topic's count, once known
    to_create: dict[str, TopicInfo] = field(default_factory=dict)  # with their derived partition counts

    @property
    def ready(self) -> bool:
        return self.tasks is not None


def configure(topology: Topology, partitions_of: Callable[[str], int | None]) -> ConfiguredTopology:
    """`partitions_of(name)`: the partition count of an existing topic, None if there is none."""
    missing = sorted({t for s in topology.subtopologies for t in s.user_sources() if partitions_of(t) is None})
    if missing:
        return ConfiguredTopology(None, (MISSING_SOURCE_TOPICS, f"Source topics {', '.join(missing)} are missing."))
    decided = _repartition_counts(topology, partitions_of)

    def count(name: str) -> int | None:
        return decided[name] if name in decided else partitions_of(name)

    mismatch = _copartition(topology, decided, count)
    if mismatch is not None:
        return ConfiguredTopology(None, (INCORRECTLY_PARTITIONED_TOPICS, mismatch))
    tasks = {s.subtopology_id: max(count(t) or 0 for t in (*s.source_topics,
                                                           *(r.name for r in s.repartition_source_topics)))
             for s in topology.subtopologies}
    wanted: dict[str, TopicInfo] = {}
    for s in topology.subtopologies:
        for info in s.repartition_source_topics:
            wanted[info.name] = TopicInfo(info.name, info.partitions or decided[info.name],
                                          info.replication_factor, info.configs)
        for info in s.changelog_topics:
            wanted[info.name] = TopicInfo(info.name, tasks[s.subtopology_id], info.replication_factor, info.configs)
    partitions = {name: info.partitions for name, info in wanted.items()}
    to_create = {}
    for name, info in sorted(wanted.items()):
        existing = partitions_of(name)
        if existing is None:
            to_create[name] = info
        elif existing != info.partitions:
            return ConfiguredTopology(None, (INCORRECTLY_PARTITIONED_TOPICS, f"Existing topic {name} has different "
                                             f"number of partitions: expected {info.partitions}, found {existing}"),
                                      partitions)
    if to_create:
        return ConfiguredTopology(None, (MISSING_INTERNAL_TOPICS, f"Internal topics are missing: "
                                         f"{', '.join(to_create)}"), partitions, to_create)
    return ConfiguredTopology(tasks, None, partitions)


def task_partitions(topology: Topology, tasks: dict[str, frozenset[int]],
                    partitions_of: Callable[[str], int | None]) -> dict[str, frozenset[int]]:
    """The topic partitions tasks read (Kafka's EndpointToPartitionsManager): task p of a
    subtopology reads partition p of each of its source topics that has one."""
    out: dict[str, set[int]] = {}
    for sub in topology.subtopologies:
        for name in (*sub.source_topics, *(r.name for r in sub.repartition_source_topics)):
            count = partitions_of(name) or 0
            for p in tasks.get(sub.subtopology_id, ()):
                if p < count:
                    out.setdefault(name, set()).add(p)
    return {t: frozenset(ps) for t, ps in out.items()}


def _repartition_counts(topology: Topology, partitions_of: Callable[[str], int | None]) -> dict[str, int]:
    """Each repartition topic's count: its own if fixed, else the widest source of its writers."""
    decided = {t.name: t.partitions for s in topology.subtopologies for t in s.repartition_source_topics
               if t.partitions}
    pending = {t.name for s in topology.subtopologies for t in s.repartition_source_topics if not t.partitions}
    while pending:
        progressed = False
        for name in sorted(pending):
            counts = [decided.get(src) if src in decided or src in pending else partitions_of(src)
                      for s in topology.subtopologies if name in s.repartition_sink_topics
                      for src in (*s.source_topics, *(r.name for r in s.repartition_source_topics))]
            known = [c for c in counts if c is not None]
            if known:
                decided[name] = max(known)
                pending.discard(name)
                progressed = True
        if not progressed:
            raise InvalidTopology("Failed to compute number of partitions for all repartition topics, make sure "
                                  "all user input topics are created and all Pattern subscriptions match at least "
                                  "one topic in the cluster")
    return decided


def _copartition(topology: Topology, decided: dict[str, int], count: Callable[[str], int | None]) -> str | None:
    """Makes copartitioned flexible repartition topics match the group's fixed ones (in
    `decided`); the mismatch message if the fixed ones differ."""
    flexible = {t.name for s in topology.subtopologies for t in s.repartition_source_topics if not t.partitions}
    for s in topology.subtopologies:
        for group in s.copartition_groups:
            fixed = {name: count(name) for name in sorted(group - flexible)}
            if len(set(fixed.values())) > 1:
                listed = ", ".join(f"{name}={n}" for name, n in fixed.items())
                return f"Following topics do not have the same number of partitions: [{listed}]"
            target = next(iter(fixed.values())) if fixed else max(decided[n] for n in group & flexible)
            for name in group & flexible:
                decided[name] = target
    return None
