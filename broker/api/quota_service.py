"""What Describe/AlterClientQuotas read and change: the stored client quotas (one broker's file
or etcd's on a cluster member), and the host names ip entities may name, resolved as they are
set. broker/quotas/quota_admin.py's QuotaAdministration is the one implementation; enforcing the
quotas is the quota manager's (broker/quotas/manager.py), not here.
"""

from __future__ import annotations

from typing import Protocol

from broker.quotas.store import Decide, Outcome, Quotas


class ClientQuotaAdmin(Protocol):
    def quotas(self) -> Quotas:
        """Every entity's stored quotas (the default entity's name None)."""

    async def alter(self, decide: Decide[Outcome], validate_only: bool) -> Outcome:
        """Runs `decide` on the current quotas and keeps the new ones durably (unless
        validate_only) before returning; returns decide's outcome."""

    async def resolve_host(self, host: str) -> str | None:
        """The address `host` resolves to now (None: it does not), kept for enforcement."""
