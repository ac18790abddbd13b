"""The group's target assignment: which server-side assignor runs, and on what.

The target is recomputed whenever the group epoch moves past the assignment epoch (a member
joined, left or changed its subscription, or a subscribed topic changed its partitions). The
assignor is the one most members ask for (`group.remote.assignor` on the client, the
heartbeat's server_assignor), else the first of `group.consumer.assignors`, as Kafka picks it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Iterable, Mapping

from broker.groups.consumer import range_assignor, uniform_assignor
from broker.groups.consumer.assignor_spec import Assignor, MemberSpec
from broker.groups.consumer.topic_partitions import Assignment

ASSIGNORS: dict[str, Assignor] = {uniform_assignor.NAME: uniform_assignor.assign,
                                  range_assignor.NAME: range_assignor.assign}


def preferred_assignor(configured: tuple[str, ...], asked: Iterable[str | None]) -> str:
    votes = Counter(name for name in asked if name)
    if votes:
        return max(votes.items(), key=lambda kv: (kv[1], -configured.index(kv[0])))[0]
    return configured[0]


def compute(assignor: str, members: Mapping[str, MemberSpec],
            topics: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    return ASSIGNORS[assignor](members, topics)
