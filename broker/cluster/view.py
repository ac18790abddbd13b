"""Who the cluster is and how its metadata changes, as handlers and the broker ask it: brokers, the
controller, each partition's leader, epoch, replicas and ISR; topic admin, reassignments,
elections; the session that lets this broker lead.

Two sources answer the one `ClusterView` protocol, so no caller asks which one it has:

- one broker is the whole cluster (`SingleBrokerView`, single_broker_view.py): it leads every
  partition, alone in its replicas and ISR, is its own controller, and keeps topics in
  topics.json; a reassignment or election is checked by the cluster's own rules and changes
  nothing;
- a cluster member answers from the MetadataImage its etcd watch keeps and writes changes to
  etcd (`ClusterImageView`, image_view.py, over broker/cluster/member.py): Metadata, DescribeCluster
  and FindCoordinator then name other brokers, and a client moves to the leader it is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Protocol, Sequence

from broker.cluster.cluster_events import ReplicationFigures
from broker.topic_names import TopicError

if TYPE_CHECKING:
    from replica.readable_partition import ReadablePartition

    from broker.cluster.etcd_layout import PartitionState
    from broker.net.listeners import Listener
    from broker.topic import Topic

# One replica list per partition, in partition order (CreateTopics / CreatePartitions assignments)
Assignments = list[list[int]]
# (name, partitions, replication factor (-1: the default), configs, assignments or None)
WantedTopic = tuple[str, int, int, dict[str, str], Assignments | None]
# (current overrides, storage mode) -> the new overrides, or raises
DecideConfigs = Callable[[dict[str, str], str], dict[str, str]]


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Placement:
    leader: int  # -1: no leader (the partition is offline)
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]


class ClusterView(Protocol):
    def brokers(self) -> list[BrokerAddress]: ...

    def brokers_on(self, listener: Listener) -> list[BrokerAddress]:
        """Each broker's address on the listener a client came in on (Kafka's
        getAliveBrokerNodes(listenerName))."""

    def broker(self, node_id: int) -> BrokerAddress | None: ...

    @property
    def controller_id(self) -> int: ...

    @property
    def cluster_id(self) -> str:
        """The cluster's id: the one in etcd every member shares, or meta.properties' alone."""

    def placement(self, topic: str, index: int, local: ReadablePartition | None) -> Placement | None:
        """`local`: the replica.Partition hosted here, None if none is."""

    def reassignments_in_progress(self, wanted: Iterable[tuple[str, Iterable[int]]] | None
                                  ) -> dict[str, list[PartitionState]]:
        """topic -> its partitions' states with a reassignment in progress (`wanted` None: all)."""

    async def create_topics(self, wanted: list[WantedTopic]) -> dict[str, Topic | TopicError]:
        """name -> Topic or TopicError, once this broker serves each created topic."""

    async def delete_topic(self, name: str) -> None: ...

    async def add_partitions(self, name: str, total: int, assignments: Assignments | None = None) -> None: ...

    async def alter_topic_configs(self, name: str, decide: DecideConfigs, validate_only: bool) -> None:
        """Raises TopicError, or what `decide` raises."""

    async def reassign(self, topic: str, index: int, target: Sequence[int] | None,
                       allow_rf_change: bool) -> PartitionState | None:
        """AlterPartitionReassignments (None `target`: cancel); the state written, None when it
        changes nothing; raises ClusterError with Kafka's refusal."""

    async def elect(self, topic: str, index: int, unclean: bool) -> PartitionState | None:
        """ElectLeaders, preferred or unclean; raises ClusterError (ELECTION_NOT_NEEDED...)."""

    async def wait_until_shown(self, written: Sequence[PartitionState], timeout_s: float) -> None:
        """Until this broker's metadata shows the written states; asyncio.TimeoutError after."""

    def replication_figures(self) -> ReplicationFigures:
        """ISR changes, elections, offline partitions, replica lag, for /metrics (on the loop)."""

    async def start(self) -> None:
        """Join the cluster before the broker serves its background work."""

    async def controlled_shutdown(self) -> None:
        """SIGTERM's first step, while still serving: hand leaderships over."""

    async def close(self) -> None: ...
