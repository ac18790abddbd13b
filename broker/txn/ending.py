"""Carrying out a transaction's end once its shard decided it (Kafka's TransactionCoordinator's
completion of a prepared end, and TransactionMarkerChannelManager's handing back of it).

A Prepare record (PrepareCommit / PrepareAbort: an EndTxn, or the abort of a fenced or
timed-out producer) replayed into a loaded shard (txn_shard.py) starts an end here: it waits
until that record is written (the `Written` operation, queued behind it), writes a marker to
every partition of the transaction (markers.py) and submits `CompleteEnd`, whose Complete
record the runtime writes. An end stops at its next step once its id is no longer its shard's
(`ours`: the partition unloaded, the id forgotten, or put back after a failed write). A newly
loaded shard resumes the ends its log left prepared; a shard whose Complete record could not
be written resumes that end after COMPLETE_RETRY_MS (txn_shard.py), which is how it is tried
again.

Each end reports how long its markers took (Prepare written -> every marker written and
replicated) and its Complete record after them (`steps`: the broker's twinlog_transaction_end_step_ms;
the step before, EndTxn -> Prepare written, is EndTxn's own request time).

It is apart from the shard because it outlives the operations: its tasks await the markers,
which go to other partitions, not to the coordinator's log; they are cancelled at close.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable

from wire.error_codes import ErrorCode

from broker.coordinator.runtime import CoordinatorError
from broker.txn.markers import MarkerWriter
from broker.txn.metadata import TxnMetadata
from broker.txn.state import TxnState
from broker.txn.txn_ops import CompleteEnd, TxnOp, Written

log = logging.getLogger(__name__)

COMPLETE_RETRY_MS = 500


class TransactionEndings:
    def __init__(self, submit: Callable[[int, TxnOp], Awaitable[object]], ours: Callable[[int, TxnMetadata], bool],
                 markers: MarkerWriter, steps: Callable[[str, float], None]) -> None:
        """`submit(partition index, op)`: the runtime's; `ours(partition index, meta)`: whether
        the id is still its shard's; `steps(step, seconds)`: a step of an end done ("markers",
        "complete")."""
        self._submit = submit
        self._ours = ours
        self._markers = markers
        self._steps = steps
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, index: int, meta: TxnMetadata) -> None:
        """Carry out the end `meta`'s Prepare record (being written in partition `index`) decided."""
        task = asyncio.ensure_future(self._finish(index, meta))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _finish(self, index: int, meta: TxnMetadata) -> None:
        try:
            await self._submit(index, Written())
        except CoordinatorError:
            return  # unloaded, or a write failed: the shard that follows goes by its log
        if not self._ours(index, meta):
            return
        prepared = time.perf_counter()
        written = await self._markers.write_all(meta.partitions, meta.producer_id, meta.producer_epoch,
                                                meta.coordinator_epoch, meta.state is TxnState.PREPARE_COMMIT,
                                                lambda: self._ours(index, meta))
        if not written:
            return
        markers_written = time.perf_counter()
        self._steps("markers", markers_written - prepared)
        try:
            code = await self._submit(index, CompleteEnd(meta))
        except CoordinatorError as exc:
            log.info("transactional id %s: writing its %s failed (%s); the coordinator's log decides",
                     meta.transactional_id, meta.state.kafka_name, exc.code.name)
            return
        if code is ErrorCode.none:
            self._steps("complete", time.perf_counter() - markers_written)
            log.info("transactional id %s: producer %d epoch %d %s", meta.transactional_id, meta.producer_id,
                     meta.producer_epoch, meta.state.kafka_name)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
