"""The transaction coordinator: the transactional ids whose `__transaction_state` partition this
broker leads, and the requests that move them (Kafka's TransactionCoordinator).

A single broker coordinates every id. In a cluster a broker coordinates the ids of the partitions
it leads and has loaded (`local_partitions`, kept by the shards of txn_loading.py); any other id gets
NOT_COORDINATOR. What a request may do in each state is decided by state.TRANSITIONS, and what
EndTxn answers by end_table.TABLE; checks of the producer id and epoch come first, here. A change
is the id's new record, written with acks=all (state_store.py) and applied once replicated; while
it is written the id answers CONCURRENT_TRANSACTIONS (`pending`).

Ending a transaction, as Kafka: EndTxn writes PrepareCommit / PrepareAbort and answers; then,
in the background, markers and CompleteCommit / CompleteAbort (ending.py, which also fences and
aborts). EndTxn v5 (transactions V2) bumps the producer's epoch in the Prepare record, so the
markers carry the new epoch, and answers it. A new coordinator finishes the ends it finds
prepared (`resume`).
"""

from __future__ import annotations

import logging
from typing import Callable, NamedTuple

from wire.error_codes import ErrorCode

from replica.partition import now_ms
from broker.producer_ids import NoProducerIdBlock
from broker.coordinator.internal_topic_log import coordinator_error
from broker.txn import end_table, state_store
from broker.txn.ending import TransactionEndings
from broker.txn.markers import MarkerWriter
from broker.txn.metadata import NO_EPOCH, V2, TxnMetadata, epoch_exhausted
from broker.txn.state import Event, TxnState, transition
from broker.txn.txn_log import NO_PRODUCER_ID, TxnRecord

log = logging.getLogger(__name__)


class InitResult(NamedTuple):
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_EPOCH


class EndResult(NamedTuple):
    """EndTxn's answer; v5 also gives the producer id and epoch the end leaves (none on an error)."""
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_EPOCH


class TransactionCoordinator:
    def __init__(self, store: state_store.TxnStateStore, producer_ids, markers: MarkerWriter,
                 max_timeout_ms: int, id_expiration_ms: int, transaction_version: Callable[[], int],
                 end_steps: Callable[[str, float], None] = lambda step, seconds: None) -> None:
        """`end_steps`: how long each step of a transaction's end took (ending.py)."""
        self.transactions: dict[str, TxnMetadata] = {}
        self._store = store
        self._producer_ids = producer_ids
        self._max_timeout_ms = max_timeout_ms
        self._id_expiration_ms = id_expiration_ms
        # None: every id is ours (one broker). In a cluster: the partitions led and loaded here.
        self.local_partitions: set[int] | None = None
        self._endings = TransactionEndings(self._write, self._ours, markers, transaction_version, end_steps)

    def coordinator_error(self, transactional_id: str) -> ErrorCode | None:
        """NOT_COORDINATOR for an id this broker does not coordinate."""
        if self.local_partitions is None or self._store.partition_index(transactional_id) in self.local_partitions:
            return None
        return ErrorCode.not_coordinator

    def _coordinator_epoch(self, transactional_id: str) -> int:
        partition = self._store.partition(transactional_id)
        return partition.leader_epoch if partition is not None else 0

    def _ours(self, meta: TxnMetadata) -> bool:
        return self.transactions.get(meta.transactional_id) is meta

    async def _write(self, meta: TxnMetadata, record: TxnRecord | None) -> ErrorCode:
        """Write the id's new record and apply it once replicated; the coordinator's error."""
        meta.pending = True
        try:
            code = await self._store.append(meta.transactional_id, record)
        finally:
            meta.pending = False
        if code is not ErrorCode.none:
            log.info("transactional id %s: writing its state failed: %s", meta.transactional_id, code.name)
            return coordinator_error(code)
        if not self._ours(meta):
            return ErrorCode.not_coordinator  # unloaded while the write was in flight
        if record is not None:
            meta.apply(record)
        return ErrorCode.none

    # --- InitProducerId -------------------------------------------------------------------

    async def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int,
                               producer_epoch: int) -> InitResult:
        not_here = self.coordinator_error(transactional_id)
        if not_here:
            return InitResult(not_here)
        if not 0 < timeout_ms <= self._max_timeout_ms:
            return InitResult(ErrorCode.invalid_transaction_timeout)
        meta = self.transactions.get(transactional_id)
        if meta is None:
            try:
                new_id = await self._producer_ids.allocate()
            except NoProducerIdBlock as exc:
                return InitResult(exc.code)
            meta = self.transactions.get(transactional_id)  # another request may have made it meanwhile
            if meta is None:
                meta = TxnMetadata.new(transactional_id, new_id, timeout_ms, self._coordinator_epoch(transactional_id),
                                       now_ms())
                self.transactions[transactional_id] = meta
        if meta.pending:
            return InitResult(ErrorCode.concurrent_transactions)
        expected = producer_id != NO_PRODUCER_ID or producer_epoch != NO_EPOCH
        check = meta.init_check(producer_id, producer_epoch) if expected else "bump"
        if check == "retry":  # KIP-360: the answer to this very request was lost; give it again
            return InitResult(ErrorCode.none, meta.producer_id, meta.producer_epoch)
        if check != "bump":
            return InitResult(check)
        outcome = transition(meta.state, Event.INIT_PRODUCER_ID)
        if outcome.next is TxnState.PREPARE_EPOCH_FENCE:
            self._endings.fence_and_abort(meta)
            return InitResult(outcome.error)
        if outcome.error:
            return InitResult(outcome.error)
        meta.pending = True  # across the id allocation too
        try:
            if epoch_exhausted(meta.producer_epoch) and (not expected or producer_epoch == meta.producer_epoch):
                try:
                    rotated_to = await self._producer_ids.allocate()
                except NoProducerIdBlock as exc:
                    return InitResult(exc.code)
                record = meta.record_with(now_ms(), (), producer_id=rotated_to, producer_epoch=0,
                                          state=TxnState.EMPTY, timeout_ms=timeout_ms, start_ms=-1)
            else:
                record = meta.record_with(now_ms(), (), producer_epoch=meta.producer_epoch + 1,
                                          state=TxnState.EMPTY, timeout_ms=timeout_ms, start_ms=-1)
        finally:
            meta.pending = False
        before = meta.record
        code = await self._write(meta, record)
        if code is not ErrorCode.none:
            return InitResult(code)
        same_id = before.producer_id == record.producer_id
        meta.last_producer_epoch = before.producer_epoch if expected and same_id else NO_EPOCH
        log.info("transactional id %s: producer %d epoch %d", transactional_id, record.producer_id,
                 record.producer_epoch)
        return InitResult(ErrorCode.none, record.producer_id, record.producer_epoch)

    # --- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: set[tuple[str, int]], client_version: int) -> ErrorCode:
        """`client_version`: the transaction version the request speaks, recorded as Kafka
        records it (2 for a leader's AddPartitionsToTxn v4+, 0 for a client's v0-v3 and for
        AddOffsetsToTxn)."""
        meta, refused = self._checked(transactional_id, producer_id, producer_epoch)
        if refused:
            return refused
        outcome = transition(meta.state, Event.ADD_PARTITIONS)
        if outcome.error:
            return outcome.error
        if meta.state is TxnState.ONGOING and partitions <= meta.partitions:
            return ErrorCode.none
        now = now_ms()
        start = meta.record.start_ms if meta.state is TxnState.ONGOING else now
        record = meta.record_with(now, meta.partitions | partitions, state=TxnState.ONGOING, start_ms=start,
                                  client_transaction_version=client_version)
        return await self._write(meta, record)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: set[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """Per partition, whether the producer's open transaction holds it (KIP-890's check a
        partition leader makes before appending a transaction's first batch): NONE, else
        TRANSACTION_ABORTABLE; one error for all for a request of another producer, or while
        the transaction ends (its markers may be on their way). Nothing is written, so a pending
        write is no reason to refuse: the leader's append is checked again (Kafka's
        handleVerifyPartitionsInTransaction)."""
        if not transactional_id:
            return dict.fromkeys(partitions, ErrorCode.invalid_request)
        refused = self.coordinator_error(transactional_id)
        meta = self.transactions.get(transactional_id)
        if refused is None and (meta is None or meta.producer_id != producer_id):
            refused = ErrorCode.invalid_producer_id_mapping
        elif refused is None and meta.producer_epoch != producer_epoch:
            refused = ErrorCode.producer_fenced
        elif refused is None and meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            refused = ErrorCode.concurrent_transactions
        if refused is not None:
            return dict.fromkeys(partitions, refused)
        return {p: ErrorCode.none if p in meta.partitions else ErrorCode.transaction_abortable for p in partitions}

    def _checked(self, transactional_id: str, producer_id: int, producer_epoch: int):
        """(metadata, None) for a request of the id's current producer, else (None, error)."""
        not_here = self.coordinator_error(transactional_id)
        if not_here:
            return None, not_here
        meta = self.transactions.get(transactional_id)
        if meta is not None and _moving_to(meta, producer_id):
            return None, ErrorCode.concurrent_transactions
        if meta is None or meta.producer_id != producer_id:
            return None, ErrorCode.invalid_producer_id_mapping
        if producer_epoch != meta.producer_epoch:
            return None, ErrorCode.producer_fenced
        if meta.pending:
            return None, ErrorCode.concurrent_transactions
        return meta, None

    # --- EndTxn -----------------------------------------------------------------------------

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                      v2: bool) -> EndResult:
        """`v2`: EndTxn v5, whose end bumps the epoch; below, the epoch stays. The answer is
        end_table.py's, Kafka's for every state, version, epoch and timing."""
        not_here = self.coordinator_error(transactional_id)
        meta = self.transactions.get(transactional_id)
        if not_here or meta is None:
            return EndResult(not_here or ErrorCode.invalid_producer_id_mapping)
        if _moving_to(meta, producer_id):
            return EndResult(ErrorCode.concurrent_transactions)
        outcome = end_table.decide(meta, producer_id, producer_epoch, commit, v2)
        if outcome.error:
            return EndResult(outcome.error)
        if outcome.next is meta.state:  # it completed: its answer again
            return EndResult(ErrorCode.none, *meta.producer_after_end) if v2 else EndResult(ErrorCode.none)
        if not v2:
            code = await self._write(meta, meta.record_with(now_ms(), state=outcome.next, client_transaction_version=0))
            if code is ErrorCode.none:
                self._endings.start(meta)
            return EndResult(code)
        epoch = meta.producer_epoch
        meta.pending = True  # across the id allocation too
        try:
            next_id = await self._producer_ids.allocate() if epoch_exhausted(epoch) else NO_PRODUCER_ID
        except NoProducerIdBlock as exc:
            return EndResult(exc.code)
        finally:
            meta.pending = False
        now = now_ms()
        start = meta.record.start_ms if meta.state is TxnState.ONGOING else now  # an abort of nothing begun
        record = meta.record_with(now, state=outcome.next, producer_epoch=epoch + 1, next_producer_id=next_id,
                                  start_ms=start, client_transaction_version=V2)
        code = await self._write(meta, record)
        if code is not ErrorCode.none:
            return EndResult(code)
        meta.last_producer_epoch = epoch
        self._endings.start(meta)
        return EndResult(ErrorCode.none, *meta.producer_after_end)

    # --- timeouts and expiry ------------------------------------------------------------------

    def abort_timed_out(self) -> int:
        """Fence and abort every transaction open longer than its timeout; how many."""
        now = now_ms()
        expired = [m for m in self.transactions.values() if m.timed_out(now)]
        for meta in expired:
            outcome = transition(meta.state, Event.TIMED_OUT)
            if outcome.next is TxnState.PREPARE_EPOCH_FENCE:
                log.info("transactional id %s: transaction open for more than %d ms; aborting",
                         meta.transactional_id, meta.timeout_ms)
                self._endings.fence_and_abort(meta)
        return len(expired)

    async def expire_ids(self) -> int:
        """Forget ids idle longer than transactional.id.expiration.ms (a tombstone each); how many."""
        gone = 0
        for meta in [m for m in self.transactions.values() if m.expired(now_ms(), self._id_expiration_ms)]:
            # Checked again: a request may have used the id while an earlier tombstone was written.
            if not (self._ours(meta) and meta.expired(now_ms(), self._id_expiration_ms)):
                continue
            outcome = transition(meta.state, Event.EXPIRE)
            if outcome.next is TxnState.DEAD and await self._write(meta, None) is ErrorCode.none:
                meta.apply(meta.record_with(now_ms(), state=TxnState.DEAD))
                del self.transactions[meta.transactional_id]
                log.info("transactional id %s expired", meta.transactional_id)
                gone += 1
        return gone

    # --- DescribeTransactions / ListTransactions ----------------------------------------------

    def describe(self, transactional_id: str) -> tuple[ErrorCode, TxnMetadata | None]:
        not_here = self.coordinator_error(transactional_id)
        if not_here:
            return not_here, None
        meta = self.transactions.get(transactional_id)
        if meta is None or meta.producer_epoch == NO_EPOCH:  # never initialised: nothing written
            return ErrorCode.transactional_id_not_found, None
        return ErrorCode.none, meta

    def listed(self, states: set[TxnState] | None, producer_ids: set[int], min_duration_ms: int) -> list[TxnMetadata]:
        """The ids coordinated here in one of `states` (None: any), of one of `producer_ids`
        (empty: any), whose transaction has run at least `min_duration_ms` (-1: any)."""
        now = now_ms()
        return [m for m in self.transactions.values()
                if m.producer_epoch != NO_EPOCH
                and (states is None or m.state in states)
                and (not producer_ids or m.producer_id in producer_ids)
                and (min_duration_ms < 0 or (m.record.start_ms >= 0 and now - m.record.start_ms >= min_duration_ms))]

    # --- loading -------------------------------------------------------------------------------

    def load(self, records: dict[str, TxnRecord | None], coordinator_epoch: int) -> list[TxnMetadata]:
        """The latest record of each id of one partition, replayed from its log."""
        loaded = []
        for transactional_id, record in records.items():
            old = self.transactions.pop(transactional_id, None)
            if old is not None:
                old.pending = False
            if record is None:
                continue
            meta = self.transactions[transactional_id] = TxnMetadata(transactional_id, record, coordinator_epoch)
            loaded.append(meta)
        return loaded

    def resume(self, loaded: list[TxnMetadata]) -> None:
        """Finish the ends found prepared: their markers may not all be written."""
        for meta in loaded:
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                log.info("transactional id %s: completing its %s found in the log", meta.transactional_id,
                         meta.state.kafka_name)
                self._endings.start(meta)

    def unload(self, partition_index: int) -> int:
        """Forget the ids of a partition no longer ours; endings in flight stop at their next step."""
        gone = [i for i in self.transactions if self._store.partition_index(i) in (partition_index, None)]
        for transactional_id in gone:
            del self.transactions[transactional_id]
        return len(gone)

    async def close(self) -> None:
        await self._endings.close()


def _moving_to(meta: TxnMetadata, producer_id: int) -> bool:
    """A V2 end is moving the id's producer to this id (its epoch ran out): the producer, told
    already, is early and retries (CONCURRENT_TRANSACTIONS) once the Complete record is written."""
    return producer_id != NO_PRODUCER_ID and producer_id == meta.record.next_producer_id
