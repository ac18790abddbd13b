"""Several ClusterMetadata members in one event loop, as the cluster tests need them."""

from __future__ import annotations

import asyncio

from broker.cluster.cluster_metadata import ClusterMetadata


def run(coro, timeout: float = 30.0):
    return asyncio.run(asyncio.wait_for(coro, timeout))


class Members:
    """Brokers by node id; `crash` stops one's keep-alives without revoking its lease, which
    is what etcd sees when a broker process dies."""

    def __init__(self, endpoint: str, prefix: str, session_timeout_ms: int = 1000, **options) -> None:
        self.endpoint = endpoint
        self.prefix = prefix
        self.session_timeout_ms = session_timeout_ms
        self.options = options
        self.live: dict[int, ClusterMetadata] = {}

    async def start(self, *node_ids: int, **options) -> list[ClusterMetadata]:
        started = []
        for node_id in node_ids:
            member = ClusterMetadata(self.endpoint, node_id, "127.0.0.1", 19000 + node_id, prefix=self.prefix,
                                     session_timeout_ms=self.session_timeout_ms, **{**self.options, **options})
            await member.start()
            self.live[node_id] = member
            started.append(member)
        expected = set(self.live)
        for member in self.live.values():
            await member.wait_for(lambda im: expected <= im.live_broker_ids() and im.controller is not None, 10)
        return started

    async def crash(self, node_id: int) -> float:
        """Returns the loop time at which keep-alives stopped."""
        member = self.live.pop(node_id)
        stopped = asyncio.get_running_loop().time()
        await member.close(revoke=False)
        return stopped

    async def stop(self, node_id: int) -> None:
        await self.live.pop(node_id).close(revoke=True)

    def any(self, but: int | None = None) -> ClusterMetadata:
        return next(m for n, m in sorted(self.live.items()) if n != but)

    async def close(self) -> None:
        for node_id in list(self.live):
            await self.stop(node_id)

    async def __aenter__(self) -> "Members":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

