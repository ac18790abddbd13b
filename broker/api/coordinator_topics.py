"""The internal topics whose partitions' leaders are the coordinators FindCoordinator names:
`__consumer_offsets` for groups, `__transaction_state` for transactional ids,
`__share_group_state` for share-partitions. Each is created on its first lookup, as Kafka
does; the stores that own them (broker/groups/offsets_store.py, broker/txn/state_store.py,
broker/groups/share/state_store.py) are what a context holds, by the key type they answer.
"""

from __future__ import annotations

import enum
from typing import Protocol

from broker.topic import Topic


class CoordinatorKind(enum.IntEnum):
    """FindCoordinator's key types."""

    GROUP = 0
    TRANSACTION = 1
    SHARE = 2  # v6+: a share-partition, "group:topicId:partition"


class CoordinatorTopic(Protocol):
    async def ensure_topic(self) -> Topic | None:
        """The topic, created if missing; None while a cluster cannot create it (too few
        brokers, etcd out of reach, another broker's creation not yet in our metadata)."""
