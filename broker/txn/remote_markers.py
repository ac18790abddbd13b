"""WriteTxnMarkers to another broker: how a coordinator in a cluster ends a transaction in the
partitions it does not lead (Kafka's TransactionMarkerChannelManager).

One connection per leader (peer_connections.py). The request is WriteTxnMarkers v1 with one
marker naming every partition of the transaction that leader leads, so it appends them together
(one group commit) and answers once all are replicated (broker/handlers/write_txn_markers.py).
A connection that fails answers NOT_LEADER_OR_FOLLOWER for each, which markers.py retries after
looking the leaders up again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
import logging
from itertools import groupby

from replica.broker_connection import ConnectionFailed
from wire.error_codes import ErrorCode
from wire.protocol import request_class

from broker.api.response_builder import make, nested
from broker.cluster.peer_connections import PeerConnections

if TYPE_CHECKING:  # the etcd client it brings is loaded only by a clustered broker
    from broker.cluster.member import ClusterMember

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_KEY = 27
WRITE_TXN_MARKERS_VERSION = 1
REQUEST_TIMEOUT_MS = 40_000  # more than the leader's own wait for the marker's replication (30 s)


class RemoteMarkers:
    def __init__(self, member: ClusterMember, node_id: int) -> None:
        self._peers = PeerConnections(member, node_id, "txn-markers", REQUEST_TIMEOUT_MS)

    async def __call__(self, leader: int, partitions: list[tuple[str, int]], producer_id: int, producer_epoch: int,
                       coordinator_epoch: int, commit: bool) -> list[ErrorCode]:
        """The leader's answer for each of `partitions` (sorted by topic), in order."""
        connection = self._peers.to(leader)
        if connection is None:
            return [ErrorCode.not_leader_or_follower] * len(partitions)
        cls = request_class(WRITE_TXN_MARKERS_KEY, WRITE_TXN_MARKERS_VERSION)
        topic_cls = nested(cls, "WritableTxnMarkerTopic")
        topics = tuple(make(topic_cls, name=name, partition_indexes=tuple(i for _, i in group))
                       for name, group in groupby(partitions, key=lambda tp: tp[0]))
        marker = make(nested(cls, "WritableTxnMarker"), producer_id=producer_id, producer_epoch=producer_epoch,
                      transaction_result=commit, coordinator_epoch=coordinator_epoch, topics=topics)
        try:
            response = await connection.request(make(cls, markers=(marker,)))
        except ConnectionFailed as exc:
            log.info("WriteTxnMarkers to broker %d for %d partitions failed: %s", leader, len(partitions), exc)
            return [ErrorCode.not_leader_or_follower] * len(partitions)
        answered = {(t.name, p.partition_index): p.error_code
                    for m in response.markers for t in m.topics for p in t.partitions}
        return [answered.get(tp, ErrorCode.unknown_server_error) for tp in partitions]

    async def close(self) -> None:
        await self._peers.close()
