"""The transaction state machine of one transactional id, as one table (Kafka's TransactionState).

    Empty ──AddPartitions──► Ongoing ──EndTxn(commit)──► PrepareCommit ──markers──► CompleteCommit
      ▲                        │  │                                                     │
      │                        │  └──EndTxn(abort)──► PrepareAbort ──markers──► CompleteAbort
      │                        │                          ▲                             │
      │   InitProducerId,      └─InitProducerId / timeout─► PrepareEpochFence ──────────┘ (the fencing abort)
      └── epoch bumped ◄────────────────────────────── CompleteCommit / CompleteAbort / Empty
    Empty / CompleteCommit / CompleteAbort ──transactional.id.expiration.ms──► Dead (forgotten)

Every (state, event) pair has an entry: the next state, and the error a request event gets in
that state (None: served). The coordinator checks the producer id and epoch first (a request
from a fenced producer never reaches this table) and asks `transition` before it writes. EndTxn,
whose answer also depends on its version and its epoch (a new end or a V2 retry), is
end_table.py's table: the EndTxn arrows above are its moves.

One entry answers an error *and* moves: InitProducerId on an Ongoing transaction, as Kafka's
prepareInitProducerIdTransit, bumps the epoch (fencing the open producer), starts aborting the
transaction and answers CONCURRENT_TRANSACTIONS so the new producer retries once the abort is
complete. PrepareEpochFence is never written to `__transaction_state` nor held: the fencing is
the PrepareAbort record itself, its epoch bumped (txn_shard.py: the way through
PrepareEpochFence, FENCE_ABORT, names the state it is written as).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from wire.error_codes import ErrorCode


class TxnState(enum.Enum):
    """Kafka's names (DescribeTransactions and ListTransactions answer them) and state bytes
    (the `__transaction_state` value's TransactionStatus)."""

    EMPTY = ("Empty", 0)
    ONGOING = ("Ongoing", 1)
    PREPARE_COMMIT = ("PrepareCommit", 2)
    PREPARE_ABORT = ("PrepareAbort", 3)
    COMPLETE_COMMIT = ("CompleteCommit", 4)
    COMPLETE_ABORT = ("CompleteAbort", 5)
    DEAD = ("Dead", 6)
    PREPARE_EPOCH_FENCE = ("PrepareEpochFence", 7)

    @property
    def kafka_name(self) -> str:
        return self.value[0]

    @property
    def byte(self) -> int:
        return self.value[1]

    @classmethod
    def from_byte(cls, value: int) -> TxnState:
        for state in cls:
            if state.byte == value:
                return state
        raise ValueError(f"unknown transaction state byte {value}")

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        return next((s for s in cls if s.kafka_name == name), None)


class Event(enum.Enum):
    INIT_PRODUCER_ID = "InitProducerId from the transactional id's producer"
    ADD_PARTITIONS = "AddPartitionsToTxn or AddOffsetsToTxn"
    MARKERS_WRITTEN = "every partition of the transaction has its marker"
    TIMED_OUT = "the transaction outlived its transaction.timeout.ms"
    FENCE_ABORT = "the abort that follows a fencing starts"
    EXPIRE = "the id was idle for transactional.id.expiration.ms"


class Outcome(NamedTuple):
    next: TxnState
    error: ErrorCode | None  # Kafka's error answered to the request; None: served


E, O, PC, PA, CC, CA, D, F = (TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                              TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.DEAD,
                              TxnState.PREPARE_EPOCH_FENCE)
_BUSY = ErrorCode.concurrent_transactions  # retriable: the client backs off and asks again


def _ok(state: TxnState) -> Outcome:
    return Outcome(state, None)


def _no(state: TxnState, error: ErrorCode) -> Outcome:
    return Outcome(state, error)


# Internal events that cannot happen in a state (markers written while none were sent, a
# timeout without an open transaction) keep the state and answer nothing; they are listed so
# the table is total.
TRANSITIONS: dict[tuple[TxnState, Event], Outcome] = {
    (E, Event.INIT_PRODUCER_ID): _ok(E),
    (E, Event.ADD_PARTITIONS): _ok(O),
    (E, Event.MARKERS_WRITTEN): _ok(E),
    (E, Event.TIMED_OUT): _ok(E),
    (E, Event.FENCE_ABORT): _ok(E),
    (E, Event.EXPIRE): _ok(D),

    (O, Event.INIT_PRODUCER_ID): Outcome(F, _BUSY),  # fence the open producer, abort, retry
    (O, Event.ADD_PARTITIONS): _ok(O),
    (O, Event.MARKERS_WRITTEN): _ok(O),
    (O, Event.TIMED_OUT): _ok(F),
    (O, Event.FENCE_ABORT): _ok(O),
    (O, Event.EXPIRE): _ok(O),  # an open transaction times out first

    (PC, Event.INIT_PRODUCER_ID): _no(PC, _BUSY),
    (PC, Event.ADD_PARTITIONS): _no(PC, _BUSY),
    (PC, Event.MARKERS_WRITTEN): _ok(CC),
    (PC, Event.TIMED_OUT): _ok(PC),  # a commit decided is carried out, never aborted
    (PC, Event.FENCE_ABORT): _ok(PC),
    (PC, Event.EXPIRE): _ok(PC),

    (PA, Event.INIT_PRODUCER_ID): _no(PA, _BUSY),
    (PA, Event.ADD_PARTITIONS): _no(PA, _BUSY),
    (PA, Event.MARKERS_WRITTEN): _ok(CA),
    (PA, Event.TIMED_OUT): _ok(PA),
    (PA, Event.FENCE_ABORT): _ok(PA),
    (PA, Event.EXPIRE): _ok(PA),

    (CC, Event.INIT_PRODUCER_ID): _ok(E),
    (CC, Event.ADD_PARTITIONS): _ok(O),
    (CC, Event.MARKERS_WRITTEN): _ok(CC),
    (CC, Event.TIMED_OUT): _ok(CC),
    (CC, Event.FENCE_ABORT): _ok(CC),
    (CC, Event.EXPIRE): _ok(D),

    (CA, Event.INIT_PRODUCER_ID): _ok(E),
    (CA, Event.ADD_PARTITIONS): _ok(O),
    (CA, Event.MARKERS_WRITTEN): _ok(CA),
    (CA, Event.TIMED_OUT): _ok(CA),
    (CA, Event.FENCE_ABORT): _ok(CA),
    (CA, Event.EXPIRE): _ok(D),

    (F, Event.INIT_PRODUCER_ID): _no(F, _BUSY),
    (F, Event.ADD_PARTITIONS): _no(F, _BUSY),
    (F, Event.MARKERS_WRITTEN): _ok(F),
    (F, Event.TIMED_OUT): _ok(F),
    (F, Event.FENCE_ABORT): _ok(PA),
    (F, Event.EXPIRE): _ok(F),
}
# A Dead id is being forgotten: a request retries and then finds no id (a new one starts);
# internal events leave it dead.
for _event in Event:
    _request = _event in (Event.INIT_PRODUCER_ID, Event.ADD_PARTITIONS)
    TRANSITIONS[(D, _event)] = _no(D, _BUSY) if _request else _ok(D)


def transition(state: TxnState, event: Event) -> Outcome:
    return TRANSITIONS[(state, event)]
