"""One broker as the whole cluster: the ClusterView (view.py) of a broker started without etcd.

It leads every partition, alone in its replicas and ISR, and is its own controller. Topics live
in its topics.json (broker/topics.py), created with a replication factor of one. Reassignments
and elections go through the same rules a controller applies (reassignment.py,
leader_election.py) to the partition as etcd would hold it: the only list a reassignment may
name is [this broker], which changes nothing; a cancel finds none in progress; the preferred
replica already leads (ELECTION_NOT_NEEDED). Nothing is ever written, so nothing is waited for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from wire.error_codes import ErrorCode
from broker.cluster import leader_election, reassignment
from broker.cluster.cluster_events import ReplicationFigures
from broker.cluster.etcd_layout import PartitionState
from broker.cluster.view import Assignments, BrokerAddress, DecideConfigs, Placement, WantedTopic
from broker.topic_names import TopicError

if TYPE_CHECKING:
    from replica.readable_partition import ReadablePartition

    from broker.net.listeners import Listener
    from broker.topic import Topic
    from broker.topics import TopicRegistry


class SingleBrokerView:
    def __init__(self, node_id: int, host: str, port: Callable[[], int], topics: TopicRegistry, cluster_id: str,
                 cordoned: Callable[[], bool] = lambda: False) -> None:
        self._node, self._host, self._port = node_id, host, port
        self._cluster_id = cluster_id  # meta.properties'
        self._topics = topics
        self._cordoned = cordoned  # all its log dirs cordoned (KIP-1066): no new partition may go here

    def brokers(self) -> list[BrokerAddress]:
        return [BrokerAddress(self._node, self._host, self._port())]

    def brokers_on(self, listener: Listener) -> list[BrokerAddress]:
        return [BrokerAddress(self._node, listener.advertised_host, listener.advertised_port)]

    def broker(self, node_id: int) -> BrokerAddress | None:
        return self.brokers()[0] if node_id == self._node else None

    @property
    def controller_id(self) -> int:
        return self._node

    @property
    def cluster_id(self) -> str:
        return self._cluster_id

    def replication_figures(self) -> ReplicationFigures:
        return ReplicationFigures()  # alone in every ISR, leading all: nothing changes, lags or goes offline

    def placement(self, topic: str, index: int, local: ReadablePartition | None) -> Placement | None:
        if local is None:
            return None
        return Placement(self._node, local.leader_epoch, (self._node,), (self._node,), ())

    def reassignments_in_progress(self, wanted: Iterable[tuple[str, Iterable[int]]] | None
                                  ) -> dict[str, list[PartitionState]]:
        return {}

    async def create_topics(self, wanted: list[WantedTopic]) -> dict[str, Topic | TopicError]:
        """Created together: one trip of file work, one topics.json write."""
        results: dict[str, Topic | TopicError] = {}
        creatable = []
        for name, partitions, rf, configs, assignments in wanted:
            if rf not in (-1, 1) or (assignments and any(len(a) != 1 for a in assignments)):
                results[name] = TopicError(ErrorCode.invalid_replication_factor,
                                           f"Replication factor: {rf} larger than available brokers: 1.")
            elif not assignments and self._cordoned():
                results[name] = self._no_uncordoned_broker(1 if rf == -1 else rf)
            else:
                creatable.append((name, partitions, configs))
        results.update(await self._topics.create(creatable))
        return results

    async def delete_topic(self, name: str) -> None:
        await self._topics.delete(name)

    async def add_partitions(self, name: str, total: int, assignments: Assignments | None = None) -> None:
        if not assignments and self._cordoned():
            raise self._no_uncordoned_broker(1)
        await self._topics.add_partitions(name, total)

    @staticmethod
    def _no_uncordoned_broker(rf: int) -> TopicError:
        """Kafka's placement message when no broker may take the replicas (placement.py's)."""
        return TopicError(ErrorCode.invalid_replication_factor,
                          f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} "
                          "cannot be reached because only 0 broker(s) are registered.")

    async def alter_topic_configs(self, name: str, decide: DecideConfigs, validate_only: bool) -> None:
        topic = self._topics.topics.get(name)
        if topic is None:
            raise TopicError(ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist")
        configs = decide(topic.configs, topic.storage_mode)
        if not validate_only:
            await self._topics.alter_configs(name, configs)

    async def reassign(self, topic: str, index: int, target: Sequence[int] | None,
                       allow_rf_change: bool) -> PartitionState | None:
        if target is None:
            return reassignment.cancel(self._state(topic, index), {self._node}, unclean_allowed=False)
        return reassignment.start(self._state(topic, index), list(target), {self._node}, allow_rf_change)

    async def elect(self, topic: str, index: int, unclean: bool) -> PartitionState | None:
        rule = leader_election.unclean if unclean else leader_election.preferred
        return rule(self._state(topic, index), {self._node})

    def _state(self, topic: str, index: int) -> PartitionState:
        """The partition as a controller store would hold it."""
        placement = self.placement(topic, index, self._topics.partition(topic, index))
        return PartitionState(topic, index, placement.leader, placement.leader_epoch, placement.isr, 0,
                              placement.replicas)

    async def wait_until_shown(self, written: Sequence[PartitionState], timeout_s: float) -> None:
        """Nothing was written."""

    async def start(self) -> None:
        """Nothing to join."""

    async def controlled_shutdown(self) -> None:
        """Nothing to hand over."""

    async def close(self) -> None:
        """Nothing to leave."""
