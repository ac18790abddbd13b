"""Where a cluster keeps its client quotas: one etcd key, `<prefix>client_quotas`
(broker/cluster/etcd_layout.py), as the ACLs are, so an AlterClientQuotas answered by any broker
holds clients on every broker.

The same interface as the one-broker QuotaStore (store.py). Reads come from this broker's
current MetadataImage (the etcd watch keeps it), never etcd itself, converted once per new image
value, so the quota managers see a change by identity. A change is a compare-and-swap of the
whole set (two brokers altering at once both land) and returns once this broker's image shows it;
another broker applies it when its watch delivers the event, milliseconds later. The data dir's
client_quotas.json is neither read nor written by a cluster member.
"""

from __future__ import annotations

from broker.quotas.store import Decide, Outcome, Quotas, from_entries, to_entries


class ClusterQuotaStore:
    def __init__(self, metadata) -> None:
        self._metadata = metadata  # broker.cluster.ClusterMetadata
        self._seen = None  # the image's ClientQuotaList `_quotas` was converted from
        self._quotas: Quotas = {}

    def quotas(self) -> Quotas:
        listed = self._metadata.image.client_quotas
        if listed is not self._seen:
            self._quotas = from_entries(listed.entries)
            self._seen = listed
        return self._quotas

    async def alter(self, decide: Decide[Outcome], validate_only: bool) -> Outcome:
        """As QuotaStore.alter; on a lost race `decide` runs again on the newer quotas."""
        outcome: list[Outcome] = []

        def on_entries(entries: tuple[dict, ...]) -> tuple[dict, ...]:
            wanted, result = decide(from_entries(entries))
            outcome[:] = [result]
            return to_entries(wanted)

        if validate_only:
            return decide(self.quotas())[1]
        await self._metadata.update_client_quotas(on_entries)
        return outcome[0]
