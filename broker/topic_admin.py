"""Creating, deleting and growing topics: what the admin APIs (CreateTopics, DeleteTopics,
CreatePartitions), Metadata's auto-creation and the broker's own internal topics ask for.

The change itself is the cluster view's (broker/cluster/view.py: topics.json for one broker, etcd
for a cluster member), and each call returns once this broker serves it; the name rules a
creation checks before it asks are the topic registry's (broker/topics.py). Handlers reach this
as `ctx.topic_admin`, typed by broker/api/topic_admin_service.py.
"""

from __future__ import annotations

from broker.cluster.view import Assignments, ClusterView, WantedTopic
from broker.settings.config import BrokerConfig
from broker.topic import Topic
from broker.topic_names import TopicError
from broker.topics import TopicRegistry


class TopicAdministrator:
    def __init__(self, config: BrokerConfig, view: ClusterView, topics: TopicRegistry) -> None:
        self._config = config
        self._view = view
        self._topics = topics

    async def create_topics(self, wanted: list[WantedTopic]) -> dict[str, Topic | TopicError]:
        """(name, partitions, replication factor, configs, assignments or None) each, created
        together; returns name -> Topic or TopicError."""
        return await self._view.create_topics(wanted)

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str], assignments: Assignments | None = None) -> Topic:
        """One topic of create_topics; raises TopicError."""
        result = (await self.create_topics([(name, num_partitions, replication_factor, configs, assignments)]))[name]
        if isinstance(result, TopicError):
            raise result
        return result

    async def auto_create(self, names: list[str]) -> dict[str, Topic | TopicError]:
        """Metadata's auto-creation: num.partitions each, the default replication factor."""
        return await self.create_topics([(name, self._config.num_partitions, -1, {}, None) for name in names])

    async def delete_topic(self, name: str) -> None:
        await self._view.delete_topic(name)

    async def add_partitions(self, name: str, total: int, assignments: Assignments | None) -> None:
        await self._view.add_partitions(name, total, assignments)

    def check_collision(self, name: str) -> None:
        self._topics.check_collision(name)
