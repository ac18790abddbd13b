"""Requests from one broker to another that are not replication: one connection per broker, on
its inter-broker listener with this broker's own login, as the replica fetchers connect. A
broker's connection is made again when its registered address changes.

Each user keeps a pool of its own (transaction markers, partition verification, the share-group
state persister, share-group lag), so a slow kind of request never queues another: a
WriteTxnMarkers waits for its marker's replication (up to 30 s), and a produce waiting on a
verification must not queue behind it.
"""

from __future__ import annotations

from replica.broker_connection import BrokerConnection


class PeerConnections:
    def __init__(self, member, node_id: int, purpose: str, request_timeout_ms: int) -> None:
        self._member = member
        self._client_id = f"broker-{node_id}-{purpose}"
        self._request_timeout_ms = request_timeout_ms
        self._connections: dict[int, tuple[tuple, BrokerConnection]] = {}

    def to(self, node_id: int) -> BrokerConnection | None:
        """The connection to a broker; None for one not registered."""
        address = self._member.peer_address(node_id)
        if address is None:
            return None
        known = self._connections.get(node_id)
        if known is not None and known[0] == address:
            return known[1]
        host, port, login, tls = address
        connection = BrokerConnection(host, port, self._client_id, request_timeout_ms=self._request_timeout_ms,
                                      login=login, tls=tls)
        self._connections[node_id] = (address, connection)
        return connection

    async def close(self) -> None:
        for _, connection in self._connections.values():
            await connection.close()
        self._connections.clear()
