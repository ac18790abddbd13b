"""What the coordinator holds of one transactional id (Kafka's TransactionMetadata).

Everything but three fields is the id's latest `__transaction_state` record: a change is made by
an operation of the id's shard (txn_shard.py) returning the new record (`record_with`), which
the coordinator runtime writes and replays into it (`apply`). Operations of one partition run
one at a time, so two changes of an id never race. The in-memory fields, the first two Kafka's:

- `last_producer_epoch`: the epoch before the last bump, so an InitProducerId retried after
  its answer was lost (KIP-360) gets the same answer instead of a second bump;
- `coordinator_epoch`: the leader epoch of the id's `__transaction_state` partition when this
  broker loaded it, carried by every marker so a partition refuses markers of an older coordinator;
- `begun_on`: the client connection whose AddPartitionsToTxn / AddOffsetsToTxn began the open
  transaction, so an EndTxn v0-v4 sent before that (a late copy of an earlier end) is told
  apart from this transaction's (txn_shard.py); None when not begun by a client's request
  here (loaded from the log, or added by a partition leader for a transactions V2 client).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Literal

from wire.error_codes import ErrorCode
from broker.txn import txn_log
from broker.txn.state import TxnState
from broker.txn.txn_log import TxnRecord

NO_EPOCH = -1
MAX_EPOCH = 32767  # int16
V2 = 2  # the transaction.version (a record's client_transaction_version) that bumps the epoch per end


def epoch_exhausted(epoch: int) -> bool:
    """Kafka's: at MAX-1 a fencing bump would reach MAX, which no further bump could fence."""
    return epoch >= MAX_EPOCH - 1


def producer_after_end(record: TxnRecord) -> tuple[int, int]:
    """The producer id and epoch a prepared end leaves: the next producer id at epoch 0 when a
    transactions V2 end ran out of epochs, else the record's."""
    if record.client_transaction_version >= V2 and record.next_producer_id != txn_log.NO_PRODUCER_ID:
        return record.next_producer_id, 0
    return record.producer_id, record.producer_epoch


@dataclass(eq=False)
class TxnMetadata:
    transactional_id: str
    record: TxnRecord
    coordinator_epoch: int
    last_producer_epoch: int = NO_EPOCH
    partitions: set[tuple[str, int]] = field(default_factory=set)
    begun_on: int | None = None  # a connection id (broker/net/request_context.py): ids grow with accept order

    def __post_init__(self) -> None:
        self.partitions = {(t, i) for t, indexes in self.record.partitions for i in indexes}

    @classmethod
    def new(cls, transactional_id: str, producer_id: int, timeout_ms: int, coordinator_epoch: int,
            now: int) -> TxnMetadata:
        """A new id before its first InitProducerId is written: epoch -1, bumped to 0 by it."""
        record = TxnRecord(producer_id, NO_EPOCH, timeout_ms, TxnState.EMPTY, (), now, -1)
        return cls(transactional_id, record, coordinator_epoch)

    # The record's fields, read as attributes.
    @property
    def state(self) -> TxnState:
        return self.record.state

    @property
    def producer_id(self) -> int:
        return self.record.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.record.producer_epoch

    @property
    def previous_producer_id(self) -> int:
        return self.record.previous_producer_id

    @property
    def timeout_ms(self) -> int:
        return self.record.timeout_ms

    def record_with(self, now: int, partitions: Iterable[tuple[str, int]] | None = None,
                    **changes: Any) -> TxnRecord:
        """The record after a change: `changes` are TxnRecord fields, `partitions` the
        (topic, index) pairs (unchanged when None); the update time is now. As Kafka's
        prepareTransitionTo, the previous producer id is the id before the change and the next
        one is none unless the change names it (only a prepared end whose epoch ran out does)."""
        if partitions is not None:
            changes["partitions"] = txn_log.grouped(partitions)
        changes.setdefault("previous_producer_id", self.record.producer_id)
        changes.setdefault("next_producer_id", txn_log.NO_PRODUCER_ID)
        return replace(self.record, last_update_ms=now, **changes)

    @property
    def producer_after_end(self) -> tuple[int, int]:
        return producer_after_end(self.record)

    def completed(self, now: int, state: TxnState) -> TxnRecord:
        """The CompleteCommit / CompleteAbort record after every marker of a prepared end is
        written: no partitions, and the producer of `producer_after_end` (Kafka's prepareComplete)."""
        producer_id, epoch = self.producer_after_end
        return self.record_with(now, (), state=state, producer_id=producer_id, producer_epoch=epoch)

    def apply(self, record: TxnRecord) -> None:
        """The record is written and replicated: it is the id's state now."""
        self.record = record
        self.partitions = {(t, i) for t, indexes in record.partitions for i in indexes}

    def expired(self, now: int, expiration_ms: int) -> bool:
        return (self.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
                and now - self.record.last_update_ms >= expiration_ms)

    def timed_out(self, now: int) -> bool:
        return self.state is TxnState.ONGOING and now - self.record.start_ms >= self.record.timeout_ms

    def init_check(self, producer_id: int, producer_epoch: int) -> Literal["bump", "retry"] | ErrorCode:
        """For an InitProducerId naming its producer (KIP-360): "bump", "retry" (the same answer
        again) or PRODUCER_FENCED, as Kafka's isValidProducerId and prepareIncrementProducerEpoch."""
        if self.producer_epoch == NO_EPOCH:
            return "bump"
        if producer_id == self.producer_id:
            if producer_epoch == self.producer_epoch:
                return "bump"
            if producer_epoch == self.last_producer_epoch:
                return "retry"
        elif producer_id == self.previous_producer_id and epoch_exhausted(producer_epoch):
            return "retry"
        return ErrorCode.producer_fenced
