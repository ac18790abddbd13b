"""Kafka's features as handlers read and change them (KIP-584): the finalized levels
(ApiVersions shows them; group, share and streams APIs are switched off at level 0,
broker/features.py switched_off) and UpdateFeatures. broker/feature_store.py's FeatureStore (one
broker's file) and ClusterFeatureStore (etcd's) implement it.
"""

from __future__ import annotations

from typing import Protocol

from broker.feature_store import Decide
from broker.features import Features, LevelSource


class FeatureLevels(LevelSource, Protocol):
    def features(self) -> Features:
        """What this broker supports and the levels finalized now, with their epoch."""

    async def update(self, decide: Decide, validate_only: bool) -> None:
        """Keeps the levels `decide` makes of the current ones (with a new epoch) durably before
        returning, unless validate_only; raises what `decide` raises."""
