"""Who the cluster is, as handlers answer it: brokers, the controller, each partition's
leader, epoch, replicas, ISR and offline replicas.

One broker is the whole cluster: it leads every partition, alone in its replicas and ISR,
and is its own controller (`SingleBrokerView`). In a cluster the answer comes from the
MetadataImage the etcd watch keeps (`ClusterImageView`): Metadata, DescribeCluster and
FindCoordinator then name other brokers, and a client moves to the leader it is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


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


class SingleBrokerView:
    def __init__(self, node_id: int, host: str, port: Callable[[], int]) -> None:
        self._node, self._host, self._port = node_id, host, port

    def brokers(self) -> list[BrokerAddress]:
        return [BrokerAddress(self._node, self._host, self._port())]

    def broker(self, node_id: int) -> BrokerAddress | None:
        return self.brokers()[0] if node_id == self._node else None

    @property
    def controller_id(self) -> int:
        return self._node

    def placement(self, topic: str, index: int, local) -> Placement | None:
        """`local`: the hosted replica.Partition (one broker hosts them all)."""
        if local is None:
            return None
        return Placement(self._node, local.leader_epoch, (self._node,), (self._node,), ())


class ClusterImageView:
    def __init__(self, image: Callable[[], object]) -> None:
        self._image = image  # -> the current MetadataImage

    def brokers(self) -> list[BrokerAddress]:
        image = self._image()
        return [BrokerAddress(b.node_id, b.host, b.port) for _, b in sorted(image.brokers.items())]

    def brokers_on(self, listener_name: str) -> list[BrokerAddress]:
        """Each broker's address on the named listener, as Kafka's getAliveBrokerNodes: a
        broker without that listener is left out (a client could not talk to it the way it
        talks to us); one registered without endpoints is named by its registration address."""
        out = []
        for _, b in sorted(self._image().brokers.items()):
            address = b.endpoint(listener_name) if b.endpoints else b
            if address is not None:
                out.append(BrokerAddress(b.node_id, address.host, address.port))
        return out

    def broker(self, node_id: int) -> BrokerAddress | None:
        b = self._image().brokers.get(node_id)
        return BrokerAddress(b.node_id, b.host, b.port) if b is not None else None

    @property
    def controller_id(self) -> int:
        controller = self._image().controller
        return controller.node_id if controller is not None else -1

    def placement(self, topic: str, index: int, local=None) -> Placement | None:
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
