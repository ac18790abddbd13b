"""Which transactional ids this broker coordinates: those of the `__transaction_state` partitions it
leads, loaded from their logs (Kafka's TransactionStateManager.loadTransactionsForTxnTopicPartition
on election, removeTransactionsForTxnTopicPartition on resignation).

As group loading (broker/groups/group_loading.py), driven by metadata: after every image the
cluster member applied, `sync` loads the partitions newly led (their whole log: the new leader's
log is the partition's truth) and unloads those no longer led. A replay runs on the event loop
without awaiting, so no request sees a partition half loaded. A loaded id whose end was prepared
(PrepareCommit / PrepareAbort) has its markers sent again and its end completed; an open
transaction stays open until its producer ends it or its timeout aborts it.

A single broker leads every partition: it loads the whole topic once, at start-up
(`local_partitions` stays None: every id is its own, also before the topic exists).
"""

from __future__ import annotations

import logging

from replica.partition import Partition

from broker.txn import txn_log
from broker.txn.coordinator import TransactionCoordinator
from broker.txn.state_store import TxnStateStore

log = logging.getLogger(__name__)


class TxnLoading:
    def __init__(self, coordinator: TransactionCoordinator, store: TxnStateStore, cluster: bool) -> None:
        self._coordinator = coordinator
        self._store = store
        self._cluster = cluster
        if cluster:
            coordinator.local_partitions = set()

    def start(self) -> None:
        """At start-up, on the event loop (resumed endings are tasks)."""
        if self._cluster:
            self.sync()
            return
        topic = self._store.topic()
        for index, partition in enumerate(topic.partitions if topic is not None else ()):
            if partition is not None:
                self._load(index, partition)

    async def on_metadata(self, image, change) -> None:
        """A ClusterMetadata listener (called after the cluster member applied the image)."""
        self.sync()

    def sync(self) -> None:
        owned = self._coordinator.local_partitions
        if owned is None:
            return
        topic = self._store.topic()
        led = {} if topic is None else {i: p for i, p in enumerate(topic.partitions) if p is not None and p.is_leader}
        for index in sorted(owned - set(led)):
            owned.discard(index)
            gone = self._coordinator.unload(index)
            log.info("no longer coordinating the transactions of %s-%d: %d unloaded", txn_log.TOPIC, index, gone)
        for index in sorted(set(led) - owned):
            self._load(index, led[index])
            owned.add(index)

    def _load(self, index: int, partition: Partition) -> None:
        latest: dict[str, txn_log.TxnRecord | None] = {}
        for stored in self._store.replay_partition(partition):
            latest[stored.transactional_id] = stored.record
        loaded = self._coordinator.load(latest, partition.leader_epoch)
        log.info("coordinating the transactions of %s-%d (leader epoch %d): %d loaded", txn_log.TOPIC, index,
                 partition.leader_epoch, len(loaded))
        self._coordinator.resume(loaded)
