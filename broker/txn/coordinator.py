"""The transaction coordinator (Kafka's TransactionCoordinator on coordinator-common): the door the
transaction requests come through, in front of the shards (txn_shard.py) of the
`__transaction_state` partitions this broker leads, run by the coordinator runtime
(broker/coordinator/runtime.py).

A request that changes an id is an operation of the id's partition (txn_ops.py), submitted to
that partition's queue: the shard decides and returns the id's new record, the runtime writes
it through the write path (acks=all, state_store.py) and replays it, and the request is
answered once it is written; a write that fails answers the coordinator's error for the log's
(internal_topic_log.coordinator_error) and the ids it changed are put back as the log holds
them (txn_shard.py). An id whose
partition is not led here gets NOT_COORDINATOR. The questions that change nothing
(a partition leader's verification, DescribeTransactions, ListTransactions) read the loaded
shards directly.

The runtime loads a partition when this broker leads it (`start`, `on_metadata` after every
image, or the first request of one of its ids) and unloads it when it no longer does. A single
broker leads every partition; before the topic exists every id is its own (nothing is known of
any), while a cluster member answers NOT_COORDINATOR until the metadata says it leads one.
"""

from __future__ import annotations

import weakref
from typing import Callable, cast

from wire.error_codes import ErrorCode

from replica.partition import Partition
from broker.coordinator.clock import Clock
from broker.coordinator.runtime import CoordinatorError, CoordinatorRuntime, ShardContext
from broker.producer_ids import NoProducerIdBlock, ProducerIdAllocator
from broker.txn import txn_log
from broker.txn.ending import COMPLETE_RETRY_MS, TransactionEndings
from broker.txn.markers import MarkerWriter
from broker.txn.metadata import NO_EPOCH, TxnMetadata
from broker.txn.state import TxnState
from broker.txn.state_store import TxnStateStore
from broker.txn.txn_ops import (NEEDS_PRODUCER_ID, AddPartitions, EndResult, EndTxn, InitProducerId, InitResult,
                                StoredTxn, TxnOp)
from broker.txn.txn_shard import TxnShard, TxnShardConfig


class TransactionCoordinator:
    def __init__(self, store: TxnStateStore, producer_ids: ProducerIdAllocator, markers: MarkerWriter,
                 max_timeout_ms: int, shard_config: TxnShardConfig, cluster: bool, clock: Clock | None = None,
                 end_steps: Callable[[str, float], None] = lambda step, seconds: None) -> None:
        """`end_steps`: how long each step of a transaction's end took (ending.py)."""
        self._store = store
        self._producer_ids = producer_ids
        self._max_timeout_ms = max_timeout_ms
        self._shard_config = shard_config
        self._cluster = cluster
        self._runtime: CoordinatorRuntime[StoredTxn, TxnOp, object] = CoordinatorRuntime(
            store, self._new_shard, store, clock)
        self.clock = self._runtime.clock
        self._endings = TransactionEndings(self._runtime.submit, self._ours, markers, end_steps)
        self._shard_made: weakref.WeakSet[Partition] = weakref.WeakSet()  # partitions with a shard made before

    def start(self) -> None:
        """At start-up, on the event loop: load the partitions led here."""
        self._runtime.sync()

    async def on_metadata(self, image: object, change: object) -> None:
        """A ClusterMetadata listener (called after the cluster member applied the image)."""
        self._runtime.sync()

    def coordinator_error(self, transactional_id: str) -> ErrorCode | None:
        """NOT_COORDINATOR for an id this broker does not coordinate."""
        index = self._store.partition_index(transactional_id)
        if index is None:
            return ErrorCode.not_coordinator if self._cluster else None
        return None if self._runtime.shard(index) is not None else ErrorCode.not_coordinator

    # --- requests that write ----------------------------------------------------------------------

    async def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int,
                               producer_epoch: int) -> InitResult:
        not_here = self.coordinator_error(transactional_id)
        if not_here:
            return InitResult(not_here)
        if not 0 < timeout_ms <= self._max_timeout_ms:
            return InitResult(ErrorCode.invalid_transaction_timeout)
        answer = await self._with_producer_id(
            transactional_id, lambda new_id: InitProducerId(transactional_id, timeout_ms, producer_id, producer_epoch,
                                                            new_id))
        return answer if isinstance(answer, InitResult) else InitResult(cast(ErrorCode, answer))

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: set[tuple[str, int]], client_version: int,
                             connection: int | None = None) -> ErrorCode:
        """`client_version`: the transaction version the request speaks, recorded as Kafka
        records it (2 for a leader's AddPartitionsToTxn v4+, 0 for a client's v0-v3 and for
        AddOffsetsToTxn); `connection`: the client connection a client's request came on."""
        not_here = self.coordinator_error(transactional_id)
        if not_here:
            return not_here
        op = AddPartitions(transactional_id, producer_id, producer_epoch, frozenset(partitions), client_version,
                           connection)
        try:
            return cast(ErrorCode, await self._submit(transactional_id, op))
        except CoordinatorError as exc:
            return exc.code

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                      v2: bool, connection: int | None = None) -> EndResult:
        """`v2`: EndTxn v5, whose end bumps the epoch; below, the epoch stays. `connection`: the
        client connection the request came on."""
        not_here = self.coordinator_error(transactional_id)
        if not_here:
            return EndResult(not_here)
        answer = await self._with_producer_id(
            transactional_id, lambda new_id: EndTxn(transactional_id, producer_id, producer_epoch, commit, v2,
                                                    connection, new_id))
        return answer if isinstance(answer, EndResult) else EndResult(cast(ErrorCode, answer))

    async def _with_producer_id(self, transactional_id: str, op: Callable[[int], TxnOp]) -> object:
        """The operation's answer; run again with a new producer id when the shard asks for one
        (txn_ops.py). An ErrorCode when it could not run."""
        new_id = txn_log.NO_PRODUCER_ID
        for _ in range(2):
            try:
                answer = await self._submit(transactional_id, op(new_id))
            except CoordinatorError as exc:
                return exc.code
            if answer is not NEEDS_PRODUCER_ID:
                return answer
            try:
                new_id = await self._producer_ids.allocate()
            except NoProducerIdBlock as exc:
                return exc.code
        return ErrorCode.concurrent_transactions  # unreachable: a run given an id uses it

    async def _submit(self, transactional_id: str, op: TxnOp) -> object:
        topic = await self._store.ensure_topic()
        if topic is None:
            raise CoordinatorError(ErrorCode.coordinator_not_available, f"{txn_log.TOPIC} cannot be created now")
        return await self._runtime.submit(txn_log.partition_for(transactional_id, len(topic.partitions)), op)

    # --- questions --------------------------------------------------------------------------------

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: set[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """Per partition, whether the producer's open transaction holds it (KIP-890's check a
        partition leader makes before appending a transaction's first batch): NONE, else
        TRANSACTION_ABORTABLE; one error for all for a request of another producer, or while
        the transaction ends (its markers may be on their way). Nothing is written (Kafka's
        handleVerifyPartitionsInTransaction)."""
        if not transactional_id:
            return dict.fromkeys(partitions, ErrorCode.invalid_request)
        refused = self.coordinator_error(transactional_id)
        meta = self._meta(transactional_id)
        if refused is None:
            if meta is None or meta.producer_id != producer_id:
                refused = ErrorCode.invalid_producer_id_mapping
            elif meta.producer_epoch != producer_epoch:
                refused = ErrorCode.producer_fenced
            elif meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                refused = ErrorCode.concurrent_transactions
        if refused is not None or meta is None:
            return dict.fromkeys(partitions, refused or ErrorCode.invalid_producer_id_mapping)
        return {p: ErrorCode.none if p in meta.partitions else ErrorCode.transaction_abortable for p in partitions}

    def describe(self, transactional_id: str) -> tuple[ErrorCode, TxnMetadata | None]:
        not_here = self.coordinator_error(transactional_id)
        if not_here:
            return not_here, None
        meta = self._meta(transactional_id)
        if meta is None or meta.producer_epoch == NO_EPOCH:  # never initialised: nothing written
            return ErrorCode.transactional_id_not_found, None
        return ErrorCode.none, meta

    def listed(self, states: set[TxnState] | None, producer_ids: set[int], min_duration_ms: int) -> list[TxnMetadata]:
        """The ids coordinated here in one of `states` (None: any), of one of `producer_ids`
        (empty: any), whose transaction has run at least `min_duration_ms` (-1: any)."""
        now = self.clock.now_ms()
        return [m for shard in self._shards() for m in shard.transactions.values()
                if m.producer_epoch != NO_EPOCH
                and (states is None or m.state in states)
                and (not producer_ids or m.producer_id in producer_ids)
                and (min_duration_ms < 0 or (m.record.start_ms >= 0 and now - m.record.start_ms >= min_duration_ms))]

    def shard(self, index: int) -> TxnShard | None:
        """The loaded shard of `__transaction_state` partition `index` (None: not led here)."""
        return self._runtime.shard(index)  # type: ignore[return-value]  # every shard made here is one

    async def close(self) -> None:
        await self._endings.close()

    # --- inside -----------------------------------------------------------------------------------

    def _new_shard(self, context: ShardContext[TxnOp]) -> TxnShard:
        index = context.partition.index
        # A partition's first shard resumes its prepared ends at once; a later one (led again)
        # after the retry backoff, so a partition whose leadership flaps does not send its
        # markers again in a tight loop.
        delay = COMPLETE_RETRY_MS if context.partition in self._shard_made else 0
        self._shard_made.add(context.partition)
        return TxnShard(context, self._shard_config, lambda meta: self._endings.start(index, meta), delay)

    def _shards(self) -> list[TxnShard]:
        topic = self._store.topic()
        count = len(topic.partitions) if topic is not None else 0
        return [s for s in map(self.shard, range(count)) if s is not None]

    def _meta(self, transactional_id: str) -> TxnMetadata | None:
        index = self._store.partition_index(transactional_id)
        shard = self.shard(index) if index is not None else None
        return shard.transactions.get(transactional_id) if shard is not None else None

    def _ours(self, index: int, meta: TxnMetadata) -> bool:
        """Whether `meta` is still the id's state here (not unloaded, forgotten or put back since)."""
        shard = self.shard(index)
        return shard is not None and shard.transactions.get(meta.transactional_id) is meta
