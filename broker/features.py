"""Kafka's features (KIP-584): what this broker supports, what the cluster has finalized, and
UpdateFeatures' rules for changing a finalized level, as Kafka's FeatureControlManager has them.

Four features, each switching what twinlog does:

- `transaction.version` (KIP-890), 0-2: from 2 the Java client 4.x uses transactions V2 (EndTxn
  v5, Produce v12, TxnOffsetCommit v5), and the transaction coordinator bumps the producer epoch
  when it aborts a fenced producer's transaction (broker/txn/ending.py);
- `group.version` (KIP-848), 0-1: from 1 ConsumerGroupHeartbeat and ConsumerGroupDescribe are
  served; at 0 they answer UNSUPPORTED_VERSION, as Kafka's isConsumerGroupProtocolEnabled;
- `share.version` (KIP-932), 0-1: from 1 share groups are served (ShareGroupHeartbeat,
  ShareGroupDescribe, ShareFetch, ShareAcknowledge and the share-group offset admin APIs); at 0
  they answer UNSUPPORTED_VERSION, as Kafka's isShareGroupProtocolEnabled;
- `streams.version` (KIP-1071), 0-1: from 1 streams groups are served (StreamsGroupHeartbeat,
  StreamsGroupDescribe); at 0 they answer UNSUPPORTED_VERSION, as Kafka 4.2+'s.

Before any UpdateFeatures the levels are the bootstrap ones: `transaction.version` from the
broker setting of that name, `group.version`, `share.version` and `streams.version` at 1 (Kafka 4.3's
defaults for a new cluster). An UpdateFeatures writes the whole finalized set with a new epoch (feature_store.py:
features.json in the data dir, etcd on a cluster), and from then on that set is the truth, the
setting only the bootstrap, as Kafka's storage-format features are.

Kafka's finalized-features epoch is the metadata offset of the last feature change, and a
client takes the features of the broker with the highest epoch it has seen. Here it is the
broker's start time (ms) until an UpdateFeatures, whose epoch is above every epoch before it.
Level 0 is not listed as finalized, as Kafka leaves out a feature at level 0.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"
SUPPORTED = {TRANSACTION_VERSION: (0, 2), GROUP_VERSION: (0, 1), SHARE_VERSION: (0, 1), STREAMS_VERSION: (0, 1)}

# UpdateFeatures' upgrade types (v1+; v0's allow_downgrade maps to UPGRADE / SAFE_DOWNGRADE)
UNKNOWN, UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 0, 1, 2, 3


OFF_MESSAGE = "The version of API is not supported."  # Kafka's answer while a feature is at 0


class LevelSource(Protocol):
    def level(self, name: str) -> int:
        """A feature's finalized level now (0 when not finalized)."""


def switched_off(store: LevelSource, name: str) -> bool:
    """Whether the APIs `name` gates answer UNSUPPORTED_VERSION now (level 0), as Kafka's
    isConsumerGroupProtocolEnabled / isShareGroupProtocolEnabled."""
    return store.level(name) < 1


class Features(NamedTuple):
    supported: dict[str, tuple[int, int]]  # name -> (min, max) version this broker serves
    finalized: dict[str, int]  # name -> finalized level (features at level 0 left out)
    epoch: int


class FeatureUpdateError(Exception):
    """INVALID_UPDATE_VERSION with Kafka's message: the whole request fails, as Kafka's
    updateFeatures answers the first error for every feature."""


def bootstrap_levels(transaction_version: int) -> dict[str, int]:
    return {TRANSACTION_VERSION: transaction_version, GROUP_VERSION: 1, SHARE_VERSION: 1, STREAMS_VERSION: 1}


def advertised(levels: dict[str, int], epoch: int) -> Features:
    return Features(SUPPORTED, {name: level for name, level in levels.items() if level > 0}, epoch)


def updated(current: dict[str, int], updates: list[tuple[str, int, int]], node_id: int) -> dict[str, int]:
    """The finalized levels after `updates` [(feature, level, upgrade type)], checked in order by
    Kafka's rules; raises FeatureUpdateError at the first that fails, changing nothing."""
    out = dict(current)
    for name, level, upgrade_type in updates:
        def invalid(reason: str) -> FeatureUpdateError:
            return FeatureUpdateError(f"Invalid update version {level} for feature {name}. {reason}")
        if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            raise invalid("The controller does not support the given upgrade type.")
        if level < 0:
            raise invalid("A feature version cannot be less than 0.")
        lo, hi = SUPPORTED.get(name, (0, 0))
        if name not in SUPPORTED or not lo <= level <= hi:
            raise invalid(f"Local controller {node_id} " + (
                "does not support this feature." if hi == 0 else f"only supports versions {lo}-{hi}"))
        now = out.get(name, 0)
        if level < now and upgrade_type == UPGRADE:
            raise invalid("Can't downgrade the version of this feature without setting the upgrade type to "
                          "either safe or unsafe downgrade.")
        if level > now and upgrade_type != UPGRADE:
            raise invalid("Can't downgrade to a newer version.")
        out[name] = level
    return out
