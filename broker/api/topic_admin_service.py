"""What the topic and cluster admin handlers ask of topic administration: create (CreateTopics,
Metadata's auto-creation), delete, add partitions (TopicAdministrator, broker/topic_admin.py, is
the one implementation). Looking topics up is TopicLookup's (topic_lookup.py); who leads what,
reassignments and elections are the cluster view's (broker/cluster/view.py)."""

from __future__ import annotations

from typing import Protocol

from broker.cluster.view import Assignments, WantedTopic
from broker.topic import Topic
from broker.topic_names import TopicError


class TopicAdmin(Protocol):
    async def create_topics(self, wanted: list[WantedTopic]) -> dict[str, Topic | TopicError]:
        """Created together; name -> Topic, or why not, once this broker serves each."""

    async def auto_create(self, names: list[str]) -> dict[str, Topic | TopicError]:
        """Metadata's auto-creation, with the broker's default partitions and replication factor."""

    async def delete_topic(self, name: str) -> None:
        """Raises TopicError."""

    async def add_partitions(self, name: str, total: int, assignments: Assignments | None) -> None:
        """Grows the topic to `total` partitions; raises TopicError."""

    def check_collision(self, name: str) -> None:
        """Raises TopicError when `name` differs from an existing topic's only in '.' vs '_'."""
