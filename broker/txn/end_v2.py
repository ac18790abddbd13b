"""EndTxn v5: how a client of transactions V2 ends its transaction (KIP-890 part 2, Kafka's
TransactionCoordinator.endTransaction for transaction version 2).

Every end bumps the producer's epoch. PrepareCommit / PrepareAbort carry epoch + 1, the markers
are written with it, so a late write of the ended transaction (at the old epoch) is refused by
every partition it touched and by the coordinator; the answer gives the producer its new epoch.
An end that would take the epoch past 32766 (metadata.epoch_exhausted) also names a new producer
id in the Prepare record (next_producer_id); its markers still carry the old id at 32767, and the
Complete record moves to the new id at epoch 0, which is what the answer gives
(TxnMetadata.producer_after_end).

So the epoch of a request says what it is. With the id at epoch E in the coordinator:

    CURRENT  the request has E: a new end (of the open transaction, or an abort of none)
    RETRY    it has E - 1 (or, after a new id, the old id at 32766 with E = 0): the retry of an
             end whose answer was lost
    OTHER    anything else: a fenced producer

and the answer, per state, abort or commit and kind (Kafka's table, Ongoing and the Prepare
states added):

                     abort RETRY     abort CURRENT      commit RETRY    commit CURRENT
    Ongoing          fenced          PrepareAbort       fenced          PrepareCommit
    Empty            fenced          PrepareAbort (*)   fenced          INVALID_TXN_STATE
    PrepareAbort     CONCURRENT      fenced             INVALID_TXN     fenced
    PrepareCommit    INVALID_TXN     fenced             CONCURRENT      fenced
    CompleteAbort    answered        PrepareAbort (*)   INVALID_TXN     INVALID_TXN
    CompleteCommit   INVALID_TXN     PrepareAbort (*)   answered        INVALID_TXN

(*) an abort with no partition: a V2 client cannot know whether a leader already enrolled one,
so it may abort what the coordinator never saw begin; no marker is needed. "answered": the end
already completed, the current id and epoch are answered and nothing is written. OTHER is
fenced in every state; PrepareEpochFence (a fencing in progress) and Dead answer
CONCURRENT_TRANSACTIONS to every request, as in the V1 table (state.py).
"""

from __future__ import annotations

import enum

from broker.txn.metadata import MAX_EPOCH, TxnMetadata
from broker.txn.state import Outcome, TxnState

E, O, PC, PA, CC, CA, D, F = (TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                              TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.DEAD,
                              TxnState.PREPARE_EPOCH_FENCE)
_FENCED = "producer_fenced"
_BUSY = "concurrent_transactions"
_WRONG = "invalid_txn_state"


class Kind(enum.Enum):
    CURRENT = "the id's epoch"
    RETRY = "the epoch before the last end's bump"
    OTHER = "neither: fenced"


def kind(meta: TxnMetadata, producer_id: int, producer_epoch: int) -> Kind | None:
    """What an EndTxn v5 of this producer is to the id; None when the producer id is not the
    id's (INVALID_PRODUCER_ID_MAPPING)."""
    if producer_id == meta.previous_producer_id and producer_epoch == MAX_EPOCH - 1 and meta.producer_epoch == 0:
        return Kind.RETRY  # an end that moved the producer to a new id, retried
    if producer_id != meta.producer_id:
        return None
    if producer_epoch == meta.producer_epoch:
        return Kind.CURRENT
    return Kind.RETRY if producer_epoch + 1 == meta.producer_epoch else Kind.OTHER


def _row(state: TxnState, abort_retry, abort_current, commit_retry, commit_current, other=_FENCED):
    """One state's cells: the state an end moves to (its own state: answered, nothing written),
    or the error it answers."""
    cells = {(False, Kind.RETRY): abort_retry, (False, Kind.CURRENT): abort_current,
             (True, Kind.RETRY): commit_retry, (True, Kind.CURRENT): commit_current,
             (False, Kind.OTHER): other, (True, Kind.OTHER): other}
    return {(state, commit, k): Outcome(cell, None) if isinstance(cell, TxnState) else Outcome(state, cell)
            for (commit, k), cell in cells.items()}


TABLE: dict[tuple[TxnState, bool, Kind], Outcome] = {
    **_row(O, _FENCED, PA, _FENCED, PC),
    **_row(E, _FENCED, PA, _FENCED, _WRONG),
    **_row(PA, _BUSY, _FENCED, _WRONG, _FENCED),
    **_row(PC, _WRONG, _FENCED, _BUSY, _FENCED),
    **_row(CA, CA, PA, _WRONG, _WRONG),
    **_row(CC, _WRONG, PA, CC, _WRONG),
    **_row(F, _BUSY, _BUSY, _BUSY, _BUSY, other=_BUSY),  # a fencing in progress: retry, whoever asks
    **_row(D, _BUSY, _BUSY, _BUSY, _BUSY, other=_BUSY),  # being forgotten: the retry finds no id
}


def decide(meta: TxnMetadata, producer_id: int, producer_epoch: int, commit: bool) -> Outcome:
    """The table's answer for this request; INVALID_PRODUCER_ID_MAPPING for another producer."""
    k = kind(meta, producer_id, producer_epoch)
    if k is None:
        return Outcome(meta.state, "invalid_producer_id_mapping")
    return TABLE[(meta.state, commit, k)]
