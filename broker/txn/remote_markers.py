"""WriteTxnMarkers to another broker: how a coordinator in a cluster ends a transaction in a
partition it does not lead (Kafka's TransactionMarkerChannelManager).

One connection per leader (peer_connections.py). The request is WriteTxnMarkers v1 with one
marker for one partition; the leader appends it and answers once it is replicated
(broker/handlers/write_txn_markers.py). A connection that fails answers NOT_LEADER_OR_FOLLOWER, which markers.py
retries after looking the leader up again.
"""

from __future__ import annotations

import logging

from replica.broker_connection import ConnectionFailed
from wire.protocol import request_class

from broker.handlers.response_builder import make, nested
from broker.cluster.peer_connections import PeerConnections

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_KEY = 27
WRITE_TXN_MARKERS_VERSION = 1
REQUEST_TIMEOUT_MS = 40_000  # more than the leader's own wait for the marker's replication (30 s)


class RemoteMarkers:
    def __init__(self, member, node_id: int) -> None:
        self._peers = PeerConnections(member, node_id, "txn-markers", REQUEST_TIMEOUT_MS)

    async def __call__(self, leader: int, topic: str, index: int, producer_id: int, producer_epoch: int,
                       coordinator_epoch: int, commit: bool) -> str:
        connection = self._peers.to(leader)
        if connection is None:
            return "not_leader_or_follower"
        cls = request_class(WRITE_TXN_MARKERS_KEY, WRITE_TXN_MARKERS_VERSION)
        marker = make(nested(cls, "WritableTxnMarker"), producer_id=producer_id, producer_epoch=producer_epoch,
                      transaction_result=commit, coordinator_epoch=coordinator_epoch,
                      topics=(make(nested(cls, "WritableTxnMarkerTopic"), name=topic, partition_indexes=(index,)),))
        try:
            response = await connection.request(make(cls, markers=(marker,)))
        except ConnectionFailed as exc:
            log.info("WriteTxnMarkers to broker %d for %s-%d failed: %s", leader, topic, index, exc)
            return "not_leader_or_follower"
        for m in response.markers:
            for t in m.topics:
                for p in t.partitions:
                    if t.name == topic and p.partition_index == index:
                        return p.error_code.name
        return "unknown_server_error"

    async def close(self) -> None:
        await self._peers.close()
