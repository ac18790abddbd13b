"""The cluster's `ClusterView` on a cluster member (broker/cluster/view.py has the protocol and
what both sources say): reads come from the MetadataImage the member's etcd watch keeps, changes
go to etcd through the member (broker/cluster/member.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

from broker.cluster.cluster_events import ReplicationFigures
from broker.cluster.reassignment import in_progress
from broker.cluster.view import Assignments, BrokerAddress, DecideConfigs, Placement, WantedTopic
from broker.topic_names import TopicError

if TYPE_CHECKING:
    from replica.readable_partition import ReadablePartition

    from broker.cluster.etcd_layout import PartitionState
    from broker.cluster.member import ClusterMember
    from broker.cluster.metadata_image import MetadataImage
    from broker.net.listeners import Listener
    from broker.topic import Topic


class ClusterImageView:
    """A cluster member's view: reads from the current MetadataImage, changes through etcd."""

    def __init__(self, member: ClusterMember) -> None:
        self._member = member

    def _image(self) -> MetadataImage:
        return self._member.metadata.image

    def brokers(self) -> list[BrokerAddress]:
        image = self._image()
        return [BrokerAddress(b.node_id, b.host, b.port) for _, b in sorted(image.brokers.items())]

    def brokers_on(self, listener: Listener) -> list[BrokerAddress]:
        """A broker without a listener of that name is left out (a client could not talk to it
        the way it talks to us); one registered without endpoints is named by its registration
        address."""
        out = []
        for _, b in sorted(self._image().brokers.items()):
            address = b.endpoint(listener.name) if b.endpoints else b
            if address is not None:
                out.append(BrokerAddress(b.node_id, address.host, address.port))
        return out

    def broker(self, node_id: int) -> BrokerAddress | None:
        b = self._image().brokers.get(node_id)
        return BrokerAddress(b.node_id, b.host, b.port) if b is not None else None

    @property
    def cluster_id(self) -> str:
        return self._member.cluster_id

    @property
    def controller_id(self) -> int:
        controller = self._image().controller
        return controller.node_id if controller is not None else -1

    def replication_figures(self) -> ReplicationFigures:
        member, image = self._member, self._image()
        events = member.metadata.events
        controller = image.controller
        offline = (sum(1 for state in image.partitions.values() if state.offline)
                   if controller is not None and controller.node_id == member.node_id else 0)
        return ReplicationFigures(events.isr_shrinks, events.isr_expands, events.leader_elections,
                                  events.unclean_leader_elections, events.election_seconds, offline,
                                  member.replicas.fetcher_max_lag())

    def placement(self, topic: str, index: int, local: ReadablePartition | None = None) -> Placement | None:
        image = self._image()
        state = image.partition(topic, index)
        if state is None:
            return None
        live = image.brokers
        # As Kafka's metadata cache: a leader whose registration is gone is no leader to clients
        # (LEADER_NOT_AVAILABLE) until the controller elects the next (kafka-python fails a
        # poll on a leader id missing from the broker list).
        leader = state.leader if state.leader in live else -1
        return Placement(leader, state.leader_epoch, tuple(state.replicas), tuple(state.isr),
                         tuple(r for r in state.replicas if r not in live))

    def reassignments_in_progress(self, wanted: Iterable[tuple[str, Iterable[int]]] | None
                                  ) -> dict[str, list[PartitionState]]:
        image = self._image()
        if wanted is None:
            wanted = [(name, range(record.partition_count)) for name, record in sorted(image.topics.items())]
        found: dict[str, list[PartitionState]] = {}
        for name, indexes in wanted:
            states = [s for i in indexes if (s := image.partition(name, i)) is not None and in_progress(s)]
            if states:
                found.setdefault(name, []).extend(states)
        return found

    async def create_topics(self, wanted: list[WantedTopic]) -> dict[str, Topic | TopicError]:
        results: dict[str, Topic | TopicError] = {}
        for name, partitions, rf, configs, assignments in wanted:
            try:
                results[name] = await self._member.create_topic(name, partitions, rf, configs, assignments)
            except TopicError as exc:
                results[name] = exc
        return results

    async def delete_topic(self, name: str) -> None:
        await self._member.delete_topic(name)

    async def add_partitions(self, name: str, total: int, assignments: Assignments | None = None) -> None:
        await self._member.add_partitions(name, total, assignments)

    async def alter_topic_configs(self, name: str, decide: DecideConfigs, validate_only: bool) -> None:
        await self._member.alter_topic_configs(name, decide, validate_only)

    async def reassign(self, topic: str, index: int, target: Sequence[int] | None,
                       allow_rf_change: bool) -> PartitionState | None:
        metadata = self._member.metadata
        if target is None:
            return await metadata.cancel_reassignment(topic, index)
        return await metadata.reassign(topic, index, list(target), allow_rf_change)

    async def elect(self, topic: str, index: int, unclean: bool) -> PartitionState | None:
        metadata = self._member.metadata
        return await (metadata.elect_unclean(topic, index) if unclean else metadata.elect_preferred(topic, index))

    async def wait_until_shown(self, written: Sequence[PartitionState], timeout_s: float) -> None:
        await self._member.metadata.wait_until_shown(written, timeout_s)

    async def start(self) -> None:
        await self._member.start()

    async def controlled_shutdown(self) -> None:
        await self._member.controlled_shutdown()

    async def close(self) -> None:
        await self._member.close()

