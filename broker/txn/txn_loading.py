"""Which transactional ids this broker coordinates: those of the `__transaction_state` partitions it
leads, loaded from their logs (Kafka's TransactionStateManager.loadTransactionsForTxnTopicPartition
on election, removeTransactionsForTxnTopicPartition on resignation).

The coordinator runtime (broker/coordinator/runtime.py) decides when: after every image the
cluster member applied it loads the partitions newly led (their whole log: the new leader's log is
the partition's truth) and unloads those no longer led. What loading means for transactions is
here, as a shard of one partition: the replay keeps the last record of each id; once the log is
read the coordinator takes them, and an id whose end was prepared (PrepareCommit / PrepareAbort)
has its markers sent again and its end completed; an open transaction stays open until its
producer ends it or its timeout aborts it. Unloading forgets the partition's ids. The
transaction coordinator writes its records itself (state_store.py), not through this shard.

A single broker leads every partition: it loads the whole topic once, at start-up
(`local_partitions` stays None: every id is its own, also before the topic exists).
"""

from __future__ import annotations

import logging
from typing import NoReturn

from wire.error_codes import ErrorCode

from replica.partition import Partition
from broker.coordinator.runtime import CoordinatorError, CoordinatorRuntime, Outcome
from broker.txn import txn_log
from broker.txn.coordinator import TransactionCoordinator
from broker.txn.state_store import StoredTxn, TxnStateStore

log = logging.getLogger(__name__)


class TxnPartitionLoad:
    """The transactions of one `__transaction_state` partition, as its load and unload see them."""

    def __init__(self, partition: Partition, coordinator: TransactionCoordinator) -> None:
        self._partition = partition
        self._coordinator = coordinator
        self._latest: dict[str, txn_log.TxnRecord | None] = {}  # while replaying

    def replay(self, stored: StoredTxn) -> None:
        self._latest[stored.transactional_id] = stored.record

    def loaded(self) -> None:
        loaded = self._coordinator.load(self._latest, self._partition.leader_epoch)
        self._latest = {}
        owned = self._coordinator.local_partitions
        if owned is not None:
            owned.add(self._partition.index)
        log.info("coordinating the transactions of %s-%d (leader epoch %d): %d loaded", txn_log.TOPIC,
                 self._partition.index, self._partition.leader_epoch, len(loaded))
        self._coordinator.resume(loaded)

    def unloaded(self) -> None:
        owned = self._coordinator.local_partitions
        if owned is not None:
            owned.discard(self._partition.index)
        gone = self._coordinator.unload(self._partition.index)
        log.info("no longer coordinating the transactions of %s-%d: %d unloaded", txn_log.TOPIC,
                 self._partition.index, gone)

    def handle(self, op: object) -> NoReturn:
        raise CoordinatorError(ErrorCode.unknown_server_error, f"transactions take no operation here: {op!r}")


class TxnLoading:
    def __init__(self, coordinator: TransactionCoordinator, store: TxnStateStore, cluster: bool) -> None:
        self._runtime: CoordinatorRuntime[StoredTxn, object, Outcome] = CoordinatorRuntime(
            store, lambda context: TxnPartitionLoad(context.partition, coordinator))
        if cluster:
            coordinator.local_partitions = set()  # nothing is ours until the metadata says so

    def start(self) -> None:
        """At start-up, on the event loop (resumed endings are tasks)."""
        self._runtime.sync()

    async def on_metadata(self, image, change) -> None:
        """A ClusterMetadata listener (called after the cluster member applied the image)."""
        self._runtime.sync()
