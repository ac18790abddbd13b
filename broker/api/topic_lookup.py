"""The topics a handler may look up: by name or id, and the hosted partition of one (TopicRegistry,
broker/topics.py, is the one implementation). Creating, deleting and altering topics is not here."""

from __future__ import annotations

import uuid
from typing import Mapping, Protocol

from replica.readable_partition import ReadablePartition
from wire.error_codes import ErrorCode

from broker.topic import Topic


class TopicLookup(Protocol):
    @property
    def topics(self) -> Mapping[str, Topic]:
        """Every topic this broker knows, by name (in a cluster, a topic lists None for a
        partition hosted elsewhere)."""

    @property
    def by_id(self) -> Mapping[uuid.UUID, Topic]: ...

    def get(self, name: str) -> Topic | None:
        """A topic by name, or a key-lookup topic (key_topic.py)."""

    def get_by_id(self, topic_id: uuid.UUID) -> Topic | None: ...

    def partition(self, name: str, index: int) -> ReadablePartition | None:
        """The partition hosted here, or None."""

    def missing_partition_error(self, name: str, index: int) -> ErrorCode:
        """NOT_LEADER_OR_FOLLOWER when the cluster has the partition, else UNKNOWN_TOPIC_OR_PARTITION."""
