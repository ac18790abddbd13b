"""The transactional ids of one `__transaction_state` partition (Kafka's TransactionStateManager's
per-partition metadata, run on coordinator-common as Kafka 4.x's coordinators are): a shard of
the coordinator runtime (broker/coordinator/runtime.py), which loads it when this broker leads
the partition, runs its operations (txn_ops.py) one at a time in order, writes the records they
return through the write path and replays them into it before the answer goes out. So every
change of an id, a request's or a timer's, is a record replayed: what the shard holds is what
the log says, and a write that fails puts back the ids it changed as the log holds them
(broker/coordinator/undo.py): each as a new object, so an end in flight for what was undone
stops, and an end whose Complete record was not written resumes after COMPLETE_RETRY_MS.

What a request may do in each state is state.TRANSITIONS', what EndTxn answers end_table.TABLE's;
the checks of the producer id and epoch come first, here.

- Ending a transaction, as Kafka: EndTxn writes PrepareCommit / PrepareAbort and is answered;
  a Prepare record replayed into the loaded shard hands the id to `prepared` (ending.py), which
  waits until the record is written, sends the markers and submits `CompleteEnd`. EndTxn v5
  (transactions V2) bumps the producer's epoch in the Prepare record and answers it.
- A late EndTxn v0-v4 (not Kafka's rule; Kafka's answer is transactions V2): a client that
  times an EndTxn out closes its connection and sends it again on a new one (librdkafka after
  socket.timeout.ms), and the first copy may still arrive: a network cut that dropped it
  leaves it in the client's kernel, which sends it again when the cut heals, seconds after
  the retry ended that transaction and the client began the next on its new connection.
  Below v5 every transaction of a producer has the same epoch, so by its fields the copy ends
  the open transaction, before some of its records are written: they are then refused (not
  in the ended transaction) while the others are committed. A client sends a transaction's
  EndTxn after the request that began it, on that connection or a newer one, so an EndTxn v0-v4
  on a connection older than the one that began the open transaction (`begun_on`) was sent
  before it began: it ends nothing and is answered PRODUCER_FENCED, the answer Kafka's
  transactions V2 gives the same late copy (its epoch is one behind). An id whose transaction
  was not begun by a client's request here (loaded, or added by a leader) has no such check.
- Fencing (an InitProducerId, or a timeout, finding a transaction open): one PrepareAbort
  record with the epoch bumped (twice from transaction.version 2, as Kafka's coordinator ends it
  with the server's version), then the end as above.
- Timers on the runtime's clock (ShardTimer): the timed-out transactions are looked for every
  transaction.abort.timed.out.transaction.cleanup.interval.ms, the expired ids every
  transaction.remove.expired.transaction.cleanup.interval.ms, and `loaded` resumes the ends
  found prepared after `resume_delay_ms` (later for a partition led again, so a log that keeps
  refusing does not make its retries spin).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Callable, NamedTuple, cast

from wire.error_codes import ErrorCode

from broker.coordinator.runtime import Outcome, ShardContext
from broker.coordinator.undo import Restore
from broker.txn import end_table
from broker.txn.ending import COMPLETE_RETRY_MS
from broker.txn.metadata import MAX_EPOCH, NO_EPOCH, V2, TxnMetadata, epoch_exhausted, producer_after_end
from broker.txn.state import Event, TxnState, transition
from broker.txn.txn_log import NO_PRODUCER_ID
from broker.txn.txn_ops import (NEEDS_PRODUCER_ID, AbortTimedOut, AddPartitions, CompleteEnd, EndResult, EndTxn,
                                ExpireIds, InitProducerId, InitResult, ResumeEnds, StoredTxn, TxnOp, Written)

log = logging.getLogger(__name__)

_PREPARED = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)


class TxnShardConfig(NamedTuple):
    id_expiration_ms: int  # transactional.id.expiration.ms
    abort_interval_ms: int  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    expire_interval_ms: int  # transaction.remove.expired.transaction.cleanup.interval.ms
    transaction_version: Callable[[], int]  # the cluster's transaction.version, as in force now


class TxnShard:
    def __init__(self, context: ShardContext[TxnOp], config: TxnShardConfig, prepared: Callable[[TxnMetadata], None],
                 resume_delay_ms: int) -> None:
        """`prepared(meta)`: an end to carry out once its Prepare record is written (ending.py)."""
        self.transactions: dict[str, TxnMetadata] = {}
        self._clock = context.clock
        self._timer = context.timer
        self._undo = context.undo
        self._coordinator_epoch = context.partition.leader_epoch  # carried by every marker
        self._name = f"__transaction_state-{context.partition.index}"
        self._config = config
        self._prepared = prepared
        self._resume_delay_ms = resume_delay_ms
        self._loaded = False

    # --- the runtime's --------------------------------------------------------------------------

    def replay(self, stored: StoredTxn) -> None:
        transactional_id, record = stored
        self._undo.save(transactional_id, lambda: self._saving(transactional_id))
        if record is None:
            self.transactions.pop(transactional_id, None)
            return
        meta = self.transactions.get(transactional_id)
        if meta is None:
            meta = self.transactions[transactional_id] = TxnMetadata(transactional_id, record, self._coordinator_epoch)
        else:
            meta.apply(record)
        if self._loaded and record.state in _PREPARED:
            self._prepared(meta)

    def _saving(self, transactional_id: str) -> Restore:
        """How to put the id back as it is now (before an operation's record changes it)."""
        kept = self.transactions.get(transactional_id)
        before = None if kept is None else replace(kept)  # a new object: `ours` fails for the undone one

        def restore() -> None:
            if before is None:
                self.transactions.pop(transactional_id, None)
                return
            self.transactions[transactional_id] = before
            if before.state in _PREPARED:  # its Complete record was not written: tried again later
                self._timer.schedule(ResumeEnds, COMPLETE_RETRY_MS, ResumeEnds())
        return restore

    def _changing(self, meta: TxnMetadata) -> None:
        """Before a handler changes a kept id's in-memory field: put back with it if the write fails."""
        if self.transactions.get(meta.transactional_id) is meta:
            self._undo.save(meta.transactional_id, lambda: self._saving(meta.transactional_id))

    def loaded(self) -> None:
        self._loaded = True
        log.info("coordinating the transactions of %s: %d ids", self._name, len(self.transactions))
        self._timer.schedule(AbortTimedOut, self._config.abort_interval_ms, AbortTimedOut())
        self._timer.schedule(ExpireIds, self._config.expire_interval_ms, ExpireIds())
        if any(m.state in _PREPARED for m in self.transactions.values()):
            self._timer.schedule(ResumeEnds, self._resume_delay_ms, ResumeEnds())

    def unloaded(self) -> None:
        # The ends in flight see their ids are no longer the coordinator's and stop (ending.py).
        log.info("no longer coordinating the transactions of %s: %d ids", self._name, len(self.transactions))

    def handle(self, op: TxnOp) -> Outcome[StoredTxn, object]:
        match op:
            case InitProducerId():
                return self._init_producer_id(op)
            case AddPartitions():
                return self._add_partitions(op)
            case EndTxn():
                return self._end_txn(op)
            case Written():
                return Outcome([], None)
            case CompleteEnd(meta):
                return self._complete(meta)
            case AbortTimedOut():
                return self._abort_timed_out()
            case ExpireIds():
                return self._expire_ids()
            case ResumeEnds():
                prepared = [m for m in self.transactions.values() if m.state in _PREPARED]
                for meta in prepared:
                    log.info("transactional id %s: completing its %s found in the log", meta.transactional_id,
                             meta.state.kafka_name)
                    self._prepared(meta)
                return Outcome([], len(prepared))
        raise TypeError(f"not a transaction operation: {op!r}")

    # --- requests -------------------------------------------------------------------------------

    def _init_producer_id(self, op: InitProducerId) -> Outcome[StoredTxn, object]:
        now = self._clock.now_ms()
        meta = self.transactions.get(op.transactional_id)
        if meta is None:
            if op.new_producer_id == NO_PRODUCER_ID:
                return Outcome([], NEEDS_PRODUCER_ID)
            # Not kept: its first record, written below, makes it.
            meta = TxnMetadata.new(op.transactional_id, op.new_producer_id, op.timeout_ms, self._coordinator_epoch, now)
        expected = op.producer_id != NO_PRODUCER_ID or op.producer_epoch != NO_EPOCH
        check = meta.init_check(op.producer_id, op.producer_epoch) if expected else "bump"
        if check == "retry":  # KIP-360: the answer to this very request was lost; give it again
            return Outcome([], InitResult(ErrorCode.none, meta.producer_id, meta.producer_epoch))
        if check != "bump":
            return Outcome([], InitResult(ErrorCode(check)))
        outcome = transition(meta.state, Event.INIT_PRODUCER_ID)
        if outcome.next is TxnState.PREPARE_EPOCH_FENCE:  # fence the open producer, abort; it retries
            return Outcome([self._fence_and_abort(meta, now)], InitResult(cast(ErrorCode, outcome.error)))
        if outcome.error:
            return Outcome([], InitResult(outcome.error))
        if epoch_exhausted(meta.producer_epoch) and (not expected or op.producer_epoch == meta.producer_epoch):
            if op.new_producer_id == NO_PRODUCER_ID or op.new_producer_id == meta.producer_id:
                return Outcome([], NEEDS_PRODUCER_ID)
            record = meta.record_with(now, (), producer_id=op.new_producer_id, producer_epoch=0,
                                      state=TxnState.EMPTY, timeout_ms=op.timeout_ms, start_ms=-1)
        else:
            record = meta.record_with(now, (), producer_epoch=meta.producer_epoch + 1, state=TxnState.EMPTY,
                                      timeout_ms=op.timeout_ms, start_ms=-1)
        same_id = meta.producer_id == record.producer_id
        self._changing(meta)
        meta.last_producer_epoch = meta.producer_epoch if expected and same_id else NO_EPOCH
        log.info("transactional id %s: producer %d epoch %d", op.transactional_id, record.producer_id,
                 record.producer_epoch)
        return Outcome([StoredTxn(op.transactional_id, record)],
                       InitResult(ErrorCode.none, record.producer_id, record.producer_epoch))

    def _add_partitions(self, op: AddPartitions) -> Outcome[StoredTxn, object]:
        meta = self.transactions.get(op.transactional_id)
        if meta is not None and _moving_to(meta, op.producer_id):
            return Outcome([], ErrorCode.concurrent_transactions)
        if meta is None or meta.producer_id != op.producer_id:
            return Outcome([], ErrorCode.invalid_producer_id_mapping)
        if op.producer_epoch != meta.producer_epoch:
            return Outcome([], ErrorCode.producer_fenced)
        outcome = transition(meta.state, Event.ADD_PARTITIONS)
        if outcome.error:
            return Outcome([], outcome.error)
        if meta.state is TxnState.ONGOING and op.partitions <= meta.partitions:
            return Outcome([], ErrorCode.none)
        now = self._clock.now_ms()
        begins = meta.state is not TxnState.ONGOING
        if begins:
            self._changing(meta)
            meta.begun_on = op.connection
        start = now if begins else meta.record.start_ms
        record = meta.record_with(now, meta.partitions | op.partitions, state=TxnState.ONGOING, start_ms=start,
                                  client_transaction_version=op.client_version)
        return Outcome([StoredTxn(op.transactional_id, record)], ErrorCode.none)

    def _end_txn(self, op: EndTxn) -> Outcome[StoredTxn, object]:
        """`op.v2`: EndTxn v5, whose end bumps the epoch; below, the epoch stays. The answer is
        end_table.py's, Kafka's for every state, version, epoch and timing."""
        meta = self.transactions.get(op.transactional_id)
        if meta is None:
            return Outcome([], EndResult(ErrorCode.invalid_producer_id_mapping))
        if _moving_to(meta, op.producer_id):
            return Outcome([], EndResult(ErrorCode.concurrent_transactions))
        outcome = end_table.decide(meta, op.producer_id, op.producer_epoch, op.commit, op.v2)
        if outcome.error:
            return Outcome([], EndResult(outcome.error))
        if not op.v2 and _sent_before_begin(meta, op.connection):
            log.info("transactional id %s: EndTxn on connection %d, older than connection %d that began its "
                     "transaction, is a late copy of an earlier end; refused", op.transactional_id, op.connection,
                     meta.begun_on)
            return Outcome([], EndResult(ErrorCode.producer_fenced))
        if outcome.next is meta.state:  # it completed: its answer again
            again = EndResult(ErrorCode.none, *meta.producer_after_end) if op.v2 else EndResult(ErrorCode.none)
            return Outcome([], again)
        now = self._clock.now_ms()
        if not op.v2:
            record = meta.record_with(now, state=outcome.next, client_transaction_version=0)
            return Outcome([StoredTxn(op.transactional_id, record)], EndResult(ErrorCode.none))
        epoch = meta.producer_epoch
        next_id = NO_PRODUCER_ID
        if epoch_exhausted(epoch):
            if op.new_producer_id == NO_PRODUCER_ID:
                return Outcome([], NEEDS_PRODUCER_ID)
            next_id = op.new_producer_id
        start = meta.record.start_ms if meta.state is TxnState.ONGOING else now  # an abort of nothing begun
        record = meta.record_with(now, state=outcome.next, producer_epoch=epoch + 1, next_producer_id=next_id,
                                  start_ms=start, client_transaction_version=V2)
        self._changing(meta)
        meta.last_producer_epoch = epoch
        return Outcome([StoredTxn(op.transactional_id, record)], EndResult(ErrorCode.none, *producer_after_end(record)))

    # --- ends, timeouts, expiry -------------------------------------------------------------------

    def _complete(self, meta: TxnMetadata) -> Outcome[StoredTxn, object]:
        if self.transactions.get(meta.transactional_id) is not meta:
            return Outcome([], ErrorCode.not_coordinator)  # forgotten, or put back since
        outcome = transition(meta.state, Event.MARKERS_WRITTEN)
        if outcome.next is meta.state:
            return Outcome([], ErrorCode.none)
        record = meta.completed(self._clock.now_ms(), outcome.next)
        return Outcome([StoredTxn(meta.transactional_id, record)], ErrorCode.none)

    def _fence_and_abort(self, meta: TxnMetadata, now: int) -> StoredTxn:
        """The PrepareAbort record of an open transaction whose producer is fenced: its epoch
        bumped (Kafka's PrepareEpochFence), so its late requests and batches are refused, and
        from transaction.version 2 bumped once more, so its retried EndTxn v5 (its epoch + 1
        is the fence's) is fenced rather than answered."""
        epoch = min(meta.producer_epoch + 1, MAX_EPOCH)
        stored_epoch, version = epoch, meta.record.client_transaction_version
        if self._config.transaction_version() >= V2 and epoch < MAX_EPOCH:
            stored_epoch, version = epoch + 1, V2
        aborting = transition(TxnState.PREPARE_EPOCH_FENCE, Event.FENCE_ABORT).next
        self._changing(meta)
        meta.last_producer_epoch = NO_EPOCH
        log.info("transactional id %s: producer %d fenced at epoch %d; aborting its transaction",
                 meta.transactional_id, meta.producer_id, epoch)
        return StoredTxn(meta.transactional_id, meta.record_with(now, state=aborting, producer_epoch=stored_epoch,
                                                                 client_transaction_version=version))

    def _abort_timed_out(self) -> Outcome[StoredTxn, object]:
        now = self._clock.now_ms()
        records = []
        for meta in self.transactions.values():
            if meta.timed_out(now) and transition(meta.state, Event.TIMED_OUT).next is TxnState.PREPARE_EPOCH_FENCE:
                log.info("transactional id %s: transaction open for more than %d ms; aborting",
                         meta.transactional_id, meta.timeout_ms)
                records.append(self._fence_and_abort(meta, now))
        self._timer.schedule(AbortTimedOut, self._config.abort_interval_ms, AbortTimedOut())
        return Outcome(records, len(records))

    def _expire_ids(self) -> Outcome[StoredTxn, object]:
        now = self._clock.now_ms()
        gone = [m.transactional_id for m in self.transactions.values()
                if m.expired(now, self._config.id_expiration_ms)
                and transition(m.state, Event.EXPIRE).next is TxnState.DEAD]
        for transactional_id in gone:
            log.info("transactional id %s expired", transactional_id)
        self._timer.schedule(ExpireIds, self._config.expire_interval_ms, ExpireIds())
        return Outcome([StoredTxn(i, None) for i in gone], len(gone))


def _sent_before_begin(meta: TxnMetadata, connection: int | None) -> bool:
    """The open transaction was begun on a connection newer than this request's (module doc)."""
    return (meta.state is TxnState.ONGOING and connection is not None and meta.begun_on is not None
            and connection < meta.begun_on)


def _moving_to(meta: TxnMetadata, producer_id: int) -> bool:
    """A V2 end is moving the id's producer to this id (its epoch ran out): the producer, told
    already, is early and retries (CONCURRENT_TRANSACTIONS) once the Complete record is written."""
    return producer_id != NO_PRODUCER_ID and producer_id == meta.record.next_producer_id

