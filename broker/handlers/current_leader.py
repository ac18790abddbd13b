"""Where a partition's leader went, told in the answer that says "not the leader" (KIP-951).

Fetch v16+ (on NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH) and Produce v10+ (on
NOT_LEADER_OR_FOLLOWER) carry the partition's current leader id and leader epoch, and at the
top level the endpoints of those leaders on the listener the client came in on, as Kafka's
KafkaApis.getCurrentLeader: a client redirects at once instead of waiting for a Metadata
refresh. A leader this broker does not know (-1) is named without an endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from replica.readable_partition import ReadablePartition
from wire.error_codes import ErrorCode

from broker.cluster.view import ClusterView
from broker.net.advertised_brokers import broker_address
from broker.api.response_builder import make, nested

FETCH_HINT_ERRORS = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch})
PRODUCE_HINT_ERRORS = frozenset({ErrorCode.not_leader_or_follower})
FETCH_HINT_VERSION = 16
PRODUCE_HINT_VERSION = 10


@dataclass(frozen=True, slots=True)
class LeaderHint:
    leader_id: int
    leader_epoch: int


NO_HINT = LeaderHint(-1, -1)


def leader_hint(view: ClusterView, topic: str, index: int, local: ReadablePartition | None) -> LeaderHint:
    """The metadata image's leader of topic-index (`local`: the partition hosted here, or None)."""
    placement = view.placement(topic, index, local)
    if placement is None or placement.leader < 0:
        return NO_HINT
    return LeaderHint(placement.leader, placement.leader_epoch)


def leader_field(cls: type, hint: LeaderHint | None) -> Any:
    """The response's LeaderIdAndEpoch entity for `hint`; its default (-1, -1) when None."""
    leader_cls = nested(cls, "LeaderIdAndEpoch")
    if hint is None or leader_cls is None:
        return None if leader_cls is None else leader_cls()
    return make(leader_cls, leader_id=hint.leader_id, leader_epoch=hint.leader_epoch)


def node_endpoints(view: ClusterView, cls: type, hints: Iterable[LeaderHint | None]) -> tuple[Any, ...]:
    """NodeEndpoint entities for the leaders `hints` name, once each, by node id."""
    endpoint_cls = nested(cls, "NodeEndpoint")
    if endpoint_cls is None:
        return ()
    out = []
    for node_id in sorted({h.leader_id for h in hints if h is not None and h.leader_id >= 0}):
        address = broker_address(view, node_id)
        if address is not None:
            out.append(make(endpoint_cls, node_id=address.node_id, host=address.host, port=address.port,
                            rack=None))
    return tuple(out)
