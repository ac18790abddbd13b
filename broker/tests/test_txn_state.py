"""The transaction state table: total, and every move it makes (with EndTxn's, end_table.py) is one
Kafka's TransactionState allows."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wire.error_codes import ErrorCode
from broker.txn.end_table import TABLE as END_TABLE, Kind
from broker.txn.state import TRANSITIONS, Event, Outcome, TxnState, transition

E, O, PC, PA, CC, CA, D, F = (TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                              TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.DEAD,
                              TxnState.PREPARE_EPOCH_FENCE)

# Kafka's TransactionState.validPreviousStates (4.x: transactions V2 adds PrepareAbort from Empty and
# the Complete states, an abort with nothing begun).
VALID_PREVIOUS = {
    E: {E, CC, CA},
    O: {O, E, CC, CA},
    PC: {O},
    PA: {O, F, E, CC, CA},
    CC: {PC},
    CA: {PA},
    D: {E, CC, CA},
    F: {O},
}
REQUESTS = (Event.INIT_PRODUCER_ID, Event.ADD_PARTITIONS)
ENDS = ("commit", "abort")  # an EndTxn v0-v4 at the id's epoch, nothing in flight


def step(state: TxnState, event) -> Outcome:
    if event in ENDS:
        return END_TABLE[(state, False, Kind.CURRENT, event == "commit")]
    return transition(state, event)


def test_every_state_event_pair_has_an_outcome():
    assert set(TRANSITIONS) == {(s, e) for s in TxnState for e in Event}


def test_state_bytes_and_names_are_kafkas():
    assert [(s.kafka_name, s.byte) for s in sorted(TxnState, key=lambda s: s.byte)] == [
        ("Empty", 0), ("Ongoing", 1), ("PrepareCommit", 2), ("PrepareAbort", 3), ("CompleteCommit", 4),
        ("CompleteAbort", 5), ("Dead", 6), ("PrepareEpochFence", 7)]
    assert TxnState.from_byte(3) is PA and TxnState.from_name("Ongoing") is O and TxnState.from_name("x") is None


def test_every_move_is_one_kafka_allows():
    for (state, event), outcome in TRANSITIONS.items():
        if outcome.next is not state:
            assert state in VALID_PREVIOUS[outcome.next], (state, event, outcome)
    for key, outcome in END_TABLE.items():
        if outcome.next is not key[0]:
            assert key[0] in VALID_PREVIOUS[outcome.next], (key, outcome)


def test_the_errors_kafka_answers_where_it_answers_them():
    assert transition(O, Event.INIT_PRODUCER_ID) == (F, ErrorCode.concurrent_transactions)  # fences, then retry
    assert transition(PC, Event.INIT_PRODUCER_ID).error is ErrorCode.concurrent_transactions
    assert transition(PC, Event.ADD_PARTITIONS).error is ErrorCode.concurrent_transactions
    assert transition(CC, Event.INIT_PRODUCER_ID) == (E, None)
    assert all(transition(D, e).error is ErrorCode.concurrent_transactions for e in REQUESTS)


def test_refused_requests_never_change_the_state_except_the_fencing_init():
    for (state, event), outcome in TRANSITIONS.items():
        if outcome.error is not None and (state, event) != (O, Event.INIT_PRODUCER_ID):
            assert outcome.next is state, (state, event)


def test_internal_events_never_answer_errors():
    assert all(o.error is None for (s, e), o in TRANSITIONS.items() if e not in REQUESTS)


@given(st.lists(st.sampled_from([*Event, *ENDS]), max_size=80))
def test_random_event_sequences_end_every_transaction_once(events):
    """Walk the table: a transaction that began ends in exactly one decision, and a prepared
    decision is never changed (a commit is never aborted, nor an abort committed)."""
    state = E
    decided = None
    for event in events:
        nxt = step(state, event).next
        if nxt is not state:
            assert state in VALID_PREVIOUS[nxt]
        if nxt is O and state is not O:
            decided = None  # a new transaction
        if nxt in (PC, PA) and nxt is not state:
            assert decided is None, (state, event)
            decided = nxt
        if nxt is CC:
            assert decided is PC
        if nxt is CA:
            assert decided is PA
        state = nxt
        if state is D:
            assert all(transition(D, e).next is D for e in Event)
