"""One topic as this broker hosts it: its name, id, configs, the layout of each partition
here, and the partitions themselves (TopicRegistry, topics.py, holds them all and changes them).

A topic's partitions keep their data in the topic's storage mode, chosen at creation, except
those moved to the other layout since (AlterReplicaLogDirs): `moved` names them, and topics.json
saves it with the rest.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from replica.readable_partition import ReadablePartition
from broker.topic_names import INTERNAL_TOPICS


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str]
    storage_mode: str = "segment"
    # replica.Partition each (read-only views for a key-lookup topic); None: hosted elsewhere
    partitions: list[ReadablePartition | None] = field(default_factory=list)
    moved: dict[int, str] = field(default_factory=dict)  # partitions whose layout is not storage_mode

    def mode_of(self, index: int) -> str:
        """The layout partition `index` is in here."""
        return self.moved.get(index, self.storage_mode)

    def by_mode(self, indexes) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for index in indexes:
            out.setdefault(self.mode_of(index), []).append(index)
        return out

    @property
    def internal(self) -> bool:
        # Kafka's Topic.isInternal: these two names only, not every "__" prefix (a key-lookup
        # topic is not internal: clients that exclude internal topics must still see it).
        return self.name in INTERNAL_TOPICS
