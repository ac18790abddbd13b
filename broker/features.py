"""The features ApiVersions v3+ advertises (KIP-584): what this broker supports and what the
cluster has finalized, with the epoch of that finalized set.

Three features are advertised, the ones clients act on. `share.version` (KIP-932) at 1: share
groups are served (ShareGroupHeartbeat, ShareFetch ... v1), as Kafka 4.1+ finalizes it when they
are enabled. `streams.version` (KIP-1071) at 1: streams groups are served (StreamsGroupHeartbeat
v0), as Kafka 4.2+ finalizes it. And `transaction.version` (KIP-890). Supported
0-2, Kafka 4's range; finalized at the level of the broker's transaction.version setting, which
decides whether the Java client 4.x uses transactions V2 (it does from a finalized level of 2:
EndTxn v5, Produce v12, TxnOffsetCommit v5, no AddPartitionsToTxn or AddOffsetsToTxn). Level 0
is not listed as finalized, as Kafka leaves out a feature at level 0. Requests are served by
their version whatever the level, as Kafka's are, so a client that switched to V2 keeps working
if the level is lowered.

Kafka's finalized-features epoch is the metadata offset of the last feature change, and a
client takes the features of the broker with the highest epoch it has seen. Here the level is
read at start-up, so the epoch is the time the broker started (ms): a level changed by restarting
the brokers reaches clients already running, as a feature update reaches them in Kafka. Every
broker of a cluster should have the same level; a client otherwise follows the one started last.
"""

from __future__ import annotations

from typing import NamedTuple

TRANSACTION_VERSION = "transaction.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"
SUPPORTED = {TRANSACTION_VERSION: (0, 2), SHARE_VERSION: (0, 1), STREAMS_VERSION: (0, 1)}


class Features(NamedTuple):
    supported: dict[str, tuple[int, int]]  # name -> (min, max) version this broker serves
    finalized: dict[str, int]  # name -> finalized level (features at level 0 left out)
    epoch: int


def advertised(transaction_version: int, started_ms: int) -> Features:
    finalized = {TRANSACTION_VERSION: transaction_version} if transaction_version > 0 else {}
    finalized[SHARE_VERSION] = 1  # share groups are always on: their APIs are served (share_fetch.py ...)
    finalized[STREAMS_VERSION] = 1  # so are streams groups (streams_group_heartbeat.py)
    return Features(SUPPORTED, finalized, started_ms)
