"""EndTxn v5's table (transactions V2): total, Kafka's answers cell by cell, how a request's epoch
is read, and the records an end leaves, the epoch running out included."""

from __future__ import annotations

from broker.txn.end_v2 import TABLE, Kind, decide, kind
from broker.txn.metadata import MAX_EPOCH, TxnMetadata
from broker.txn.state import TxnState
from broker.txn.txn_log import NO_PRODUCER_ID, TxnRecord

E, O, PC, PA, CC, CA, D, F = (TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                              TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.DEAD,
                              TxnState.PREPARE_EPOCH_FENCE)
PID, NEXT = 7, 8
FENCED, BUSY, WRONG = "producer_fenced", "concurrent_transactions", "invalid_txn_state"


def meta(state: TxnState, epoch: int, producer_id: int = PID, previous: int = PID,
         next_id: int = NO_PRODUCER_ID, client_version: int = 2) -> TxnMetadata:
    partitions = (("t", (0,)),) if state in (O, PC, PA) else ()
    record = TxnRecord(producer_id, epoch, 60_000, state, partitions, 100, 50, previous, next_id, client_version)
    return TxnMetadata("tx", record, 0)


def answer(state, commit, k):
    outcome = TABLE[(state, commit, k)]
    return outcome.error or (outcome.next if outcome.next is not state else "answered")


def test_the_table_is_total():
    assert set(TABLE) == {(s, c, k) for s in TxnState for c in (False, True) for k in Kind}


def test_kafkas_v2_table_for_empty_and_the_complete_states():
    # Kafka's TransactionCoordinator comment table: (abort retry, abort current, commit retry, commit current)
    expected = {E: (FENCED, PA, FENCED, WRONG), CA: ("answered", PA, WRONG, WRONG), CC: (WRONG, PA, "answered", WRONG)}
    for state, cells in expected.items():
        got = (answer(state, False, Kind.RETRY), answer(state, False, Kind.CURRENT),
               answer(state, True, Kind.RETRY), answer(state, True, Kind.CURRENT))
        assert got == cells, state


def test_an_open_or_prepared_transaction():
    assert (answer(O, True, Kind.CURRENT), answer(O, False, Kind.CURRENT)) == (PC, PA)
    assert answer(O, True, Kind.RETRY) == FENCED  # its epoch was never bumped: E - 1 is an old producer
    assert (answer(PC, True, Kind.RETRY), answer(PC, False, Kind.RETRY)) == (BUSY, WRONG)
    assert (answer(PA, False, Kind.RETRY), answer(PA, True, Kind.RETRY)) == (BUSY, WRONG)
    assert answer(PC, True, Kind.CURRENT) == FENCED  # the bumped epoch was never told to anyone yet


def test_other_epochs_are_fenced_and_fencing_or_dead_ids_retry():
    for state in TxnState:
        for commit in (False, True):
            expected = BUSY if state in (F, D) else FENCED
            assert TABLE[(state, commit, Kind.OTHER)].error == expected
            if state in (F, D):
                assert all(TABLE[(state, commit, k)].error == BUSY for k in Kind)


def test_errors_never_move_and_moves_are_to_a_prepared_end():
    for (state, _, _), outcome in TABLE.items():
        assert outcome.next is state if outcome.error else outcome.next in (state, PC, PA)


def test_a_requests_epoch_says_what_it_is():
    m = meta(CC, 5)
    assert kind(m, PID, 5) is Kind.CURRENT
    assert kind(m, PID, 4) is Kind.RETRY
    assert kind(m, PID, 3) is Kind.OTHER and kind(m, PID, 6) is Kind.OTHER
    assert kind(m, PID + 1, 5) is None
    assert decide(m, PID + 1, 5, True).error == "invalid_producer_id_mapping"
    rotated = meta(CC, 0, producer_id=NEXT, previous=PID)  # an end that ran out of epochs moved to NEXT
    assert kind(rotated, PID, MAX_EPOCH - 1) is Kind.RETRY
    assert decide(rotated, PID, MAX_EPOCH - 1, True) == (CC, None)
    assert kind(rotated, PID, MAX_EPOCH - 2) is None


def test_records_name_the_previous_producer_and_no_next_unless_told():
    m = meta(O, 5, previous=NO_PRODUCER_ID)
    prepared = m.record_with(200, state=PC, producer_epoch=6)
    assert (prepared.previous_producer_id, prepared.next_producer_id) == (PID, NO_PRODUCER_ID)
    assert m.record_with(200, state=PC, next_producer_id=NEXT).next_producer_id == NEXT


def test_an_end_leaves_the_bumped_epoch_or_the_next_producer_id():
    bumped = meta(PC, 6)
    assert bumped.producer_after_end == (PID, 6)
    done = bumped.completed(300, CC)
    assert (done.producer_id, done.producer_epoch, done.state, done.partitions) == (PID, 6, CC, ())
    ran_out = meta(PC, MAX_EPOCH, next_id=NEXT)  # prepared at 32766 + 1; the markers carry 32767
    assert ran_out.producer_after_end == (NEXT, 0)
    done = ran_out.completed(300, CC)
    assert (done.producer_id, done.producer_epoch, done.previous_producer_id, done.next_producer_id) == (
        NEXT, 0, PID, NO_PRODUCER_ID)
    v1 = meta(PC, 6, next_id=NEXT, client_version=0)  # only a V2 end moves to the next id
    assert v1.producer_after_end == (PID, 6)
