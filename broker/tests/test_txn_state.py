"""The transaction state table: total, and every move it makes is one Kafka's TransactionState allows."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.txn.state import TRANSITIONS, Event, TxnState, transition

E, O, PC, PA, CC, CA, D, F = (TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                              TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.DEAD,
                              TxnState.PREPARE_EPOCH_FENCE)

# Kafka's TransactionState.validPreviousStates (transactions V1).
VALID_PREVIOUS = {
    E: {E, CC, CA},
    O: {O, E, CC, CA},
    PC: {O},
    PA: {O, F},
    CC: {PC},
    CA: {PA},
    D: {E, CC, CA},
    F: {O},
}
REQUESTS = (Event.INIT_PRODUCER_ID, Event.ADD_PARTITIONS, Event.END_COMMIT, Event.END_ABORT)


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


def test_the_errors_kafka_answers_where_it_answers_them():
    assert transition(O, Event.INIT_PRODUCER_ID) == (F, "concurrent_transactions")  # fences, then retry
    assert transition(PC, Event.INIT_PRODUCER_ID).error == "concurrent_transactions"
    assert transition(PC, Event.ADD_PARTITIONS).error == "concurrent_transactions"
    assert transition(PC, Event.END_ABORT).error == "invalid_txn_state"
    assert transition(PA, Event.END_COMMIT).error == "invalid_txn_state"
    assert transition(E, Event.END_COMMIT).error == "invalid_txn_state"
    assert transition(CC, Event.END_COMMIT) == (CC, None)  # a retried commit that completed
    assert transition(CA, Event.END_ABORT) == (CA, None)
    assert transition(CC, Event.INIT_PRODUCER_ID) == (E, None)
    assert all(transition(D, e).error == "concurrent_transactions" for e in REQUESTS)


def test_refused_requests_never_change_the_state_except_the_fencing_init():
    for (state, event), outcome in TRANSITIONS.items():
        if outcome.error is not None and (state, event) != (O, Event.INIT_PRODUCER_ID):
            assert outcome.next is state, (state, event)


def test_internal_events_never_answer_errors():
    assert all(o.error is None for (s, e), o in TRANSITIONS.items() if e not in REQUESTS)


@given(st.lists(st.sampled_from(list(Event)), max_size=80))
def test_random_event_sequences_end_every_transaction_once(events):
    """Walk the table: a transaction that began ends in exactly one decision, and a prepared
    decision is never changed (a commit is never aborted, nor an abort committed)."""
    state = E
    decided = None
    for event in events:
        outcome = transition(state, event)
        nxt = outcome.next
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
