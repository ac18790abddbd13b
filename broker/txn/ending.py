"""Ending transactions in the background, once the coordinator has decided to (Kafka's
TransactionCoordinator's completion of a prepared end, and its fence-and-abort).

A prepared end (PrepareCommit / PrepareAbort written, EndTxn answered) goes on here: a marker to
every partition of the transaction (markers.py), then CompleteCommit / CompleteAbort, retried
every COMPLETE_RETRY_S until written or the id is no longer the coordinator's. A producer fenced
by a new InitProducerId, or whose transaction outlived its timeout, has its epoch bumped first
(PrepareEpochFence, in memory) so its late requests are refused, and its transaction is aborted
the same way.

Each end reports how long its markers took (Prepare written -> every marker written and
replicated) and its Complete record after them (`steps`: the broker's twinlog_transaction_end_step_ms;
the step before, EndTxn -> Prepare written, is EndTxn's own request time).

It is apart from the coordinator (coordinator.py) because it outlives the requests: its tasks
run after their answer, stop at their next step once the id is unloaded, and are cancelled at
close; the coordinator answers requests and decides, this drives what it decided.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable

from wire.error_codes import ErrorCode
from replica.partition import now_ms
from broker.txn.markers import MarkerWriter
from broker.txn.metadata import MAX_EPOCH, NO_EPOCH, V2, TxnMetadata
from broker.txn.state import Event, TxnState, transition
from broker.txn.txn_log import TxnRecord

log = logging.getLogger(__name__)

COMPLETE_RETRY_S = 0.5


class TransactionEndings:
    def __init__(self, write: Callable[[TxnMetadata, TxnRecord | None], Awaitable[ErrorCode]],
                 ours: Callable[[TxnMetadata], bool], markers: MarkerWriter,
                 transaction_version: Callable[[], int], steps: Callable[[str, float], None]) -> None:
        """`write`: the coordinator's write of an id's new record (its error); `ours`:
        whether the id is still the coordinator's; `steps(step, seconds)`: a step of an end
        done ("markers", "complete")."""
        self._write = write
        self._ours = ours
        self._markers = markers
        # The cluster's transaction.version, read at each fence (UpdateFeatures applies at once): from 2 a fencing abort bumps the epoch once more, as
        # Kafka's coordinator ends it with the server's version, so the fenced producer's retried
        # EndTxn v5 (its epoch + 1 is the fence's) is fenced rather than answered.
        self._transaction_version = transaction_version
        self._steps = steps
        self._tasks: set[asyncio.Task] = set()

    def start(self, meta: TxnMetadata) -> None:
        """Finish a prepared end: markers, then the Complete record."""
        task = asyncio.ensure_future(self._finish(meta, time.perf_counter()))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _finish(self, meta: TxnMetadata, prepared: float) -> None:
        """Markers to every partition of a prepared transaction, then its Complete state.
        `prepared`: time.perf_counter() when the Prepare record was written."""
        commit = meta.state is TxnState.PREPARE_COMMIT
        written = await self._markers.write_all(meta.partitions, meta.producer_id, meta.producer_epoch,
                                                meta.coordinator_epoch, commit, lambda: self._ours(meta))
        markers_written = time.perf_counter()
        if written:
            self._steps("markers", markers_written - prepared)
        while written and self._ours(meta):
            outcome = transition(meta.state, Event.MARKERS_WRITTEN)
            if outcome.next is meta.state:
                return
            code = await self._write(meta, meta.completed(now_ms(), outcome.next))
            if code is ErrorCode.none:
                self._steps("complete", time.perf_counter() - markers_written)
                log.info("transactional id %s: producer %d epoch %d %s", meta.transactional_id, meta.producer_id,
                         meta.producer_epoch, outcome.next.kafka_name)
                return
            if code is ErrorCode.not_coordinator:
                return
            await asyncio.sleep(COMPLETE_RETRY_S)

    def fence_and_abort(self, meta: TxnMetadata) -> None:
        """Bump the epoch of an open transaction's producer (its late requests and batches are
        refused from now on) and abort the transaction with the new epoch."""
        fenced_from = meta.record
        bumped = min(meta.producer_epoch + 1, MAX_EPOCH)
        meta.apply(meta.record_with(fenced_from.last_update_ms, producer_epoch=bumped,
                                    state=TxnState.PREPARE_EPOCH_FENCE))
        meta.last_producer_epoch = NO_EPOCH
        task = asyncio.ensure_future(self._abort_fenced(meta, fenced_from))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _abort_fenced(self, meta: TxnMetadata, fenced_from: TxnRecord) -> None:
        outcome = transition(meta.state, Event.FENCE_ABORT)
        bump = {}
        if self._transaction_version() >= V2 and meta.producer_epoch < MAX_EPOCH:
            bump = {"producer_epoch": meta.producer_epoch + 1, "client_transaction_version": V2}
        code = await self._write(meta, meta.record_with(now_ms(), state=outcome.next, **bump))
        if code is not ErrorCode.none:
            # Nothing was answered with the bumped epoch: back to the open transaction, which the
            # next InitProducerId or timeout check fences again.
            if self._ours(meta) and meta.state is TxnState.PREPARE_EPOCH_FENCE:
                meta.apply(fenced_from)
            return
        log.info("transactional id %s: producer %d fenced at epoch %d; aborting its transaction",
                 meta.transactional_id, meta.producer_id, meta.producer_epoch)
        await self._finish(meta, time.perf_counter())

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
