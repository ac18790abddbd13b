"""What a server-side assignor is given and what it returns (Kafka's GroupSpec / SubscribedTopicDescriber).

An assignor is a pure function: each member's subscribed topic ids and its current target
(to stay sticky), and the partition count of every subscribed topic, in; each member's new
target out. The result gives every partition of a subscribed topic to exactly one member
subscribed to it; a member subscribed to nothing gets nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable, Mapping

from broker.groups.consumer.topic_partitions import Assignment


@dataclass(frozen=True)
class MemberSpec:
    topics: frozenset[uuid.UUID]  # the subscribed topics that exist
    current: Assignment = field(default_factory=dict)  # its target before this computation
    instance_id: str | None = None


Assignor = Callable[[Mapping[str, MemberSpec], Mapping[uuid.UUID, int]], dict[str, Assignment]]
