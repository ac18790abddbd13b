"""The client quotas as their admin APIs see them (broker/api/quota_service.py's ClientQuotaAdmin):
the store that keeps them (store.py, or cluster_store.py on a cluster member) and the host
names the quota manager's ip entities hold (ip_hosts.py), which AlterClientQuotas resolves as a
quota is set so that the broker enforces it at once.
"""

from __future__ import annotations

from broker.quotas.cluster_store import ClusterQuotaStore
from broker.quotas.ip_hosts import HostAddresses
from broker.quotas.store import Decide, Outcome, Quotas, QuotaStore


class QuotaAdministration:
    def __init__(self, store: QuotaStore | ClusterQuotaStore, hosts: HostAddresses) -> None:
        self._store = store
        self._hosts = hosts

    def quotas(self) -> Quotas:
        return self._store.quotas()

    async def alter(self, decide: Decide[Outcome], validate_only: bool) -> Outcome:
        return await self._store.alter(decide, validate_only)

    async def resolve_host(self, host: str) -> str | None:
        return await self._hosts.resolve(host)
