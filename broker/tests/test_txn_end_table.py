"""EndTxn's table: total, Kafka 4.x's answer cell by cell for both versions (the table in
end_table.py's docstring is this table, rendered), how a request's epoch is read, and the
records an end leaves, the epoch running out included."""

from __future__ import annotations

import itertools

from wire.error_codes import ErrorCode
from broker.txn import end_table
from broker.txn.end_table import ALWAYS_BUSY, TABLE, Kind, decide, kind
from broker.txn.metadata import MAX_EPOCH, TxnMetadata
from broker.txn.state import TxnState
from broker.txn.txn_log import NO_PRODUCER_ID, TxnRecord

E, O, PC, PA, CC, CA, D, F = (TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                              TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.DEAD,
                              TxnState.PREPARE_EPOCH_FENCE)
PID, NEXT = 7, 8
FENCED, BUSY, WRONG = ErrorCode.producer_fenced, ErrorCode.concurrent_transactions, ErrorCode.invalid_txn_state
SHORT = {FENCED: "PF", BUSY: "CT", WRONG: "ITS", PC: "->PC", PA: "->PA"}
COLUMNS = [(commit, k) for commit in (False, True) for k in (Kind.RETRY, Kind.CURRENT, Kind.OTHER)]


def meta(state: TxnState, epoch: int, producer_id: int = PID, previous: int = PID,
         next_id: int = NO_PRODUCER_ID, client_version: int = 2) -> TxnMetadata:
    partitions = (("t", (0,)),) if state in (O, PC, PA) else ()
    record = TxnRecord(producer_id, epoch, 60_000, state, partitions, 100, 50, previous, next_id, client_version)
    return TxnMetadata("tx", record, 0)


def answer(state, v2, k, commit):
    outcome = TABLE[(state, v2, k, commit)]
    return outcome.error or (outcome.next if outcome.next is not state else "ok")


def row(state, v2):
    return tuple(answer(state, v2, k, commit) for commit, k in COLUMNS)


def rendered(v2: bool) -> str:
    """The docstring's rows for one version."""
    def line(label, cells):
        cells = [SHORT.get(c, c) for c in cells]
        return f"    {label:<35}{cells[0]:<8}{cells[1]:<8}{cells[2]:<10}{cells[3]:<8}{cells[4]:<8}{cells[5]}"
    lines = [line(s.kafka_name, row(s, v2)) for s in (E, O, CC, CA)]
    (busy,) = {row(s, v2) for s in ALWAYS_BUSY}  # one answer for every busy state
    lines += ["    PrepareCommit, PrepareAbort,", line("PrepareEpochFence, or Dead", busy)]
    return "\n".join(lines)


def test_the_table_is_total():
    assert set(TABLE) == set(itertools.product(TxnState, (False, True), Kind, (False, True)))


def test_the_docstrings_table_is_the_table():
    assert rendered(True) in end_table.__doc__
    assert rendered(False) in end_table.__doc__


def test_kafkas_v2_comment_table_for_empty_and_the_complete_states():
    # TransactionCoordinator's table: (abort retry, abort current, commit retry, commit current)
    expected = {E: (FENCED, PA, FENCED, WRONG), CA: ("ok", PA, WRONG, WRONG), CC: (WRONG, PA, "ok", WRONG)}
    for state, cells in expected.items():
        got = tuple(answer(state, True, k, commit)
                    for commit in (False, True) for k in (Kind.RETRY, Kind.CURRENT))
        assert got == cells, state


def test_v2_a_busy_id_answers_retry_before_its_epoch_is_checked():
    """KAFKA-18464: the next transaction's end sent while the last one's markers are written
    (the issue-37 fencing of Connect's exactly-once source task) is told to retry."""
    assert answer(PC, True, Kind.CURRENT, True) == BUSY
    for state, k, commit in itertools.product(ALWAYS_BUSY, Kind, (False, True)):
        assert answer(state, True, k, commit) == BUSY, (state, k, commit)


def test_v2_an_open_transaction_ends_at_its_epoch_only():
    assert (answer(O, True, Kind.CURRENT, True), answer(O, True, Kind.CURRENT, False)) == (PC, PA)
    assert answer(O, True, Kind.RETRY, True) == FENCED  # its epoch was never bumped: E - 1 is old
    assert all(answer(s, True, Kind.OTHER, c) == FENCED for s in (E, O, CC, CA) for c in (False, True))


def test_v1_checks_the_epoch_strictly_first_then_busy_then_the_state():
    for state, commit in itertools.product(TxnState, (False, True)):
        assert answer(state, False, Kind.RETRY, commit) == FENCED
        assert answer(state, False, Kind.OTHER, commit) == FENCED
        if state in ALWAYS_BUSY:
            assert answer(state, False, Kind.CURRENT, commit) == BUSY
    idle = {E: (WRONG, WRONG), O: (PA, PC), CC: (WRONG, "ok"), CA: ("ok", WRONG)}
    for state, cells in idle.items():
        assert (answer(state, False, Kind.CURRENT, False), answer(state, False, Kind.CURRENT, True)) == cells, state


def test_errors_never_move_and_moves_are_to_a_prepared_end():
    for (state, *_), outcome in TABLE.items():
        assert outcome.next is state if outcome.error else outcome.next in (state, PC, PA)


def test_a_requests_epoch_says_what_it_is():
    m = meta(CC, 5)
    assert kind(m, PID, 5, True) is Kind.CURRENT
    assert kind(m, PID, 4, True) is Kind.RETRY
    assert kind(m, PID, 3, True) is Kind.OTHER and kind(m, PID, 6, True) is Kind.OTHER
    assert kind(m, PID + 1, 5, True) is None
    assert decide(m, PID + 1, 5, True, True).error is ErrorCode.invalid_producer_id_mapping
    rotated = meta(CC, 0, producer_id=NEXT, previous=PID)  # an end that ran out of epochs moved to NEXT
    assert kind(rotated, PID, MAX_EPOCH - 1, True) is Kind.RETRY
    assert decide(rotated, PID, MAX_EPOCH - 1, True, True) == (CC, None)
    assert kind(rotated, PID, MAX_EPOCH - 2, True) is None
    assert kind(rotated, PID, MAX_EPOCH - 1, False) is None  # v0-v4 ends never move the id


def test_decide_reads_a_prepared_end_as_busy():
    assert decide(meta(PC, 5), PID, 5, False, True) == (PC, BUSY)
    assert decide(meta(PC, 5), PID, 4, False, False) == (PC, FENCED)
    assert decide(meta(CC, 5), PID, 5, False, True) == (PA, None)


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
