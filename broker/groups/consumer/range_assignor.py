"""The `range` server-side assignor: each topic's partitions in contiguous ranges.

Per topic, the members subscribed to it in member-id order take ranges of
partitions // members partitions each, the first partitions % members of them one more
(Kafka's RangeAssignor rule). Members subscribed to the same topics get the same range of
each: partition p of two co-partitioned topics goes to one member, which is what range is for.
"""

from __future__ import annotations

import uuid
from typing import Mapping

from broker.groups.consumer.assignor_spec import MemberSpec
from broker.groups.consumer.topic_partitions import Assignment

NAME = "range"


def assign(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    out: dict[str, dict[uuid.UUID, frozenset[int]]] = {m: {} for m in members}
    for topic, count in topics.items():
        subscribers = sorted(m for m, spec in members.items() if topic in spec.topics)
        if not subscribers:
            continue
        share, extra = divmod(count, len(subscribers))
        start = 0
        for i, member in enumerate(subscribers):
            end = start + share + (1 if i < extra else 0)
            if end > start:
                out[member][topic] = frozenset(range(start, end))
            start = end
    return out
