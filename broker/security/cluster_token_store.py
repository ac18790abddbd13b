"""Where a cluster keeps its delegation tokens: one etcd key per token,
`<prefix>delegation_tokens/<token id>` (broker/cluster/etcd_layout.py), so a token created,
renewed or expired through any broker holds on every broker — a client logs in with it anywhere.

The same interface as the one-broker TokenStore (token_store.py). `tokens()` reads this broker's
current MetadataImage (the etcd watch keeps it), never etcd itself, so a login never waits on
etcd; the mapping it answers is replaced only when a token changed, so the manager's HMAC index
and derived credentials are kept across unrelated metadata changes. A change is a
compare-and-swap of the token's key and returns once this broker's image shows it; another broker
sees it when its watch delivers the event, milliseconds later. The HMACs are never in etcd:
every broker derives them from delegation.token.secret.key, which must be the same on all of
them (as Kafka requires). The data dir's delegation-tokens.json is neither read nor written by
a cluster member.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from broker.security.delegation_token import TokenInformation


class ClusterTokenStore:
    def __init__(self, metadata) -> None:
        self._metadata = metadata  # broker.cluster.ClusterMetadata
        self._seen: Mapping = MappingProxyType({})  # the image's records `_tokens` was built from
        self._tokens: Mapping[str, TokenInformation] = MappingProxyType({})

    def tokens(self) -> Mapping[str, TokenInformation]:
        records = self._metadata.image.delegation_tokens
        if records is not self._seen:
            if records.keys() != self._seen.keys() or any(records[i] is not self._seen[i] for i in records):
                self._tokens = MappingProxyType({i: TokenInformation.from_json(r.info) for i, r in records.items()})
            self._seen = records
        return self._tokens

    async def put(self, token: TokenInformation, replace_only: bool = False) -> None:
        """As TokenStore.put; `replace_only` is judged against etcd's current value."""
        fields = token.to_json()
        await self._metadata.update_delegation_token(
            token.token_id, lambda current: None if replace_only and current is None else fields)

    async def remove(self, token_ids: list[str]) -> None:
        for token_id in token_ids:
            await self._metadata.update_delegation_token(token_id, lambda current: None)
