"""EndTxn's answer, every version, as one total table (Kafka 4.x's TransactionCoordinator:
endTransactionWithTV1 for v0-v4, endTransaction for v5, transactions V2, KIP-890 part 2).

A v5 end bumps the producer's epoch: PrepareCommit / PrepareAbort carry epoch + 1, the markers
are written with it, and the answer gives it to the producer (an end at 32766 also names a new
producer id: metadata.epoch_exhausted, TxnMetadata.producer_after_end). A v0-v4 end keeps the
epoch. So, with the id at epoch E in the coordinator, a request's epoch is

    CURRENT  E: a new end (v5: of the open transaction, or an abort of none)
    RETRY    E - 1, or the old id at 32766 once an end moved it to a new id at 0: the retry of a
             v5 end whose answer was lost (at v0-v4 an old producer: no end bumps there)
    OTHER    anything else

and the answer also depends on whether the id is busy: a prepared end completing. Kafka's
PrepareCommit / PrepareAbort always have the Complete transition pending from the moment the
EndTxn is answered (and from loading, for one found in the log), and here the same end is
always being carried out (ending.py), so those states are busy by themselves. So are Dead and
PrepareEpochFence, which Kafka never lets a request find other than as a pending transition
(its state match throws on them). A write of the id's record in flight (Kafka's pendingState
for the other states) is no state a request can find here: the operations of the id's
partition run one at a time (txn_shard.py), each after the records of the one before it.

Kafka checks, in order: the producer id (INVALID_PRODUCER_ID_MAPPING, here before the table);
then at v5, since 4.0 (KAFKA-18464), busy before the epoch, so a V2 producer that sends its
next transaction's EndTxn while the last one's markers are still written (the Java client
can, before that transaction's records) is told to retry rather than fenced; at v0-v4 the
epoch first (strict equality), busy second; then the state. In full ("ok": the end already
completed, answered again with nothing written; "->PC" / "->PA": the end is prepared):

    v5 (transactions V2)                        abort                     commit
                                       RETRY   CURRENT OTHER     RETRY   CURRENT OTHER
    Empty                              PF      ->PA    PF        PF      ITS     PF
    Ongoing                            PF      ->PA    PF        PF      ->PC    PF
    CompleteCommit                     ITS     ->PA    PF        ok      ITS     PF
    CompleteAbort                      ok      ->PA    PF        ITS     ITS     PF
    PrepareCommit, PrepareAbort,
    PrepareEpochFence, or Dead         CT      CT      CT        CT      CT      CT

    v0-v4                                       abort                     commit
                                       RETRY   CURRENT OTHER     RETRY   CURRENT OTHER
    Empty                              PF      ITS     PF        PF      ITS     PF
    Ongoing                            PF      ->PA    PF        PF      ->PC    PF
    CompleteCommit                     PF      ITS     PF        PF      ok      PF
    CompleteAbort                      PF      ok      PF        PF      ITS     PF
    PrepareCommit, PrepareAbort,
    PrepareEpochFence, or Dead         PF      CT      PF        PF      CT      PF

(PF PRODUCER_FENCED, CT CONCURRENT_TRANSACTIONS, ITS INVALID_TXN_STATE.) Kafka's v5 rows for
Empty and the Complete states are its own comment table; an abort with no partition (Empty, a
Complete state) is served because a V2 client cannot know whether a leader already enrolled
one, and needs no marker. A retry that finds its end completed is answered with the id's
current producer (v5). The one row not Kafka's: a request of the new producer id an end is
moving the producer to (its Complete record not yet written) is CONCURRENT_TRANSACTIONS
(coordinator._moving_to), where Kafka 4.x's EndTxn answers INVALID_PRODUCER_ID_MAPPING, fatal
to the client, though its AddPartitionsToTxn retries it (KAFKA-18660). Later than 4.3 (KAFKA-20785,
2026-08) a v5 commit RETRY in CompleteAbort (a commit racing the coordinator's own abort of a
timed-out transaction) answers PRODUCER_FENCED instead of ITS; this table keeps 4.x's ITS.
And before the table's move of an Ongoing transaction, txn_shard.py refuses (PRODUCER_FENCED)
a v0-v4 end that came on a connection older than the one that began the transaction: a late
copy of an earlier end, which no epoch tells apart below v5.
"""

from __future__ import annotations

import enum
import itertools

from wire.error_codes import ErrorCode
from broker.txn.metadata import MAX_EPOCH, TxnMetadata
from broker.txn.state import Outcome, TxnState

E, O, PC, PA, CC, CA, D, F = (TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                              TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.DEAD,
                              TxnState.PREPARE_EPOCH_FENCE)
_FENCED = ErrorCode.producer_fenced
_BUSY = ErrorCode.concurrent_transactions  # retriable: the client backs off and asks again
_WRONG = ErrorCode.invalid_txn_state  # fatal to the client: its idea of its transaction is wrong


class Kind(enum.Enum):
    CURRENT = "the id's epoch"
    RETRY = "the epoch before the last end's bump"
    OTHER = "neither"


# A state in which an end is always in progress, whether or not a write is in flight now.
ALWAYS_BUSY = frozenset({PC, PA, F, D})

# The state match, for a request whose epoch passed with nothing in flight: the state an end
# moves to (the id's own state: answered again, nothing written), or the error answered.
# v5: (abort RETRY, abort CURRENT, commit RETRY, commit CURRENT); OTHER is fenced.
_V2_CELLS: dict[TxnState, tuple[TxnState | ErrorCode, ...]] = {
    E: (_FENCED, PA, _FENCED, _WRONG),
    O: (_FENCED, PA, _FENCED, PC),
    CC: (_WRONG, PA, CC, _WRONG),
    CA: (CA, PA, _WRONG, _WRONG),
}
# v0-v4, at the id's epoch (any other is fenced): (abort, commit).
_V1_CELLS: dict[TxnState, tuple[TxnState | ErrorCode, ...]] = {
    E: (_WRONG, _WRONG),
    O: (PA, PC),
    CC: (_WRONG, CC),
    CA: (CA, _WRONG),
}


def _cell(state: TxnState, v2: bool, k: Kind, commit: bool) -> TxnState | ErrorCode:
    busy = state in ALWAYS_BUSY
    if v2:
        if busy:
            return _BUSY  # KAFKA-18464: before the epoch
        if k is Kind.OTHER:
            return _FENCED
        return _V2_CELLS[state][2 * commit + (k is Kind.CURRENT)]
    if k is not Kind.CURRENT:
        return _FENCED
    return _BUSY if busy else _V1_CELLS[state][commit]


def _outcome(state: TxnState, cell: TxnState | ErrorCode) -> Outcome:
    return Outcome(cell, None) if isinstance(cell, TxnState) else Outcome(state, cell)


# (state, v2, kind, commit) -> the answer: every combination, each Kafka's.
TABLE: dict[tuple[TxnState, bool, Kind, bool], Outcome] = {
    (s, v2, k, commit): _outcome(s, _cell(s, v2, k, commit))
    for s, v2, k, commit in itertools.product(TxnState, (False, True), Kind, (False, True))
}


def kind(meta: TxnMetadata, producer_id: int, producer_epoch: int, v2: bool) -> Kind | None:
    """What a request's producer id and epoch are to the id; None when the producer id is not
    the id's (INVALID_PRODUCER_ID_MAPPING)."""
    if v2 and producer_id == meta.previous_producer_id and producer_epoch == MAX_EPOCH - 1 and meta.producer_epoch == 0:
        return Kind.RETRY  # an end that moved the producer to a new id, retried (Kafka's retryOnOverflow)
    if producer_id != meta.producer_id:
        return None
    if producer_epoch == meta.producer_epoch:
        return Kind.CURRENT
    return Kind.RETRY if producer_epoch + 1 == meta.producer_epoch else Kind.OTHER


def decide(meta: TxnMetadata, producer_id: int, producer_epoch: int, commit: bool, v2: bool) -> Outcome:
    """The table's answer for this request; INVALID_PRODUCER_ID_MAPPING for another producer."""
    k = kind(meta, producer_id, producer_epoch, v2)
    if k is None:
        return Outcome(meta.state, ErrorCode.invalid_producer_id_mapping)
    return TABLE[(meta.state, v2, k, commit)]
