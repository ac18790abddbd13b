"""The group state table: total, and its paths are the ones Kafka's classic protocol allows."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wire.error_codes import ErrorCode
from broker.groups.state import TRANSITIONS, Event, GroupState, transition

E, P, C, S, D = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                 GroupState.COMPLETING_REBALANCE, GroupState.STABLE, GroupState.DEAD)


def test_every_state_event_pair_has_an_outcome():
    assert set(TRANSITIONS) == {(s, e) for s in GroupState for e in Event}


def test_the_errors_kafka_answers_where_it_answers_them():
    assert transition(P, Event.LEADER_SYNC).error is ErrorCode.rebalance_in_progress
    assert transition(P, Event.HEARTBEAT).error is ErrorCode.rebalance_in_progress
    assert transition(E, Event.HEARTBEAT).error is ErrorCode.unknown_member_id
    assert transition(C, Event.COMMIT).error is ErrorCode.rebalance_in_progress
    assert transition(P, Event.COMMIT).error is None  # commit before rejoining
    assert transition(S, Event.DELETE).error is ErrorCode.non_empty_group
    assert transition(E, Event.DELETE) == (D, None)
    assert transition(D, Event.DELETE).error is ErrorCode.group_id_not_found
    assert all(transition(D, e).next is D for e in Event)


def test_requests_that_are_refused_never_change_the_state():
    for (state, _event), outcome in TRANSITIONS.items():
        if outcome.error is not None:
            assert outcome.next is state


# Which events may take a group into each state (besides staying in it).
_ENTRIES = {
    P: {Event.JOIN, Event.MEMBER_GONE, Event.SYNC_TIMEOUT},
    C: {Event.JOIN_PHASE_DONE},
    S: {Event.LEADER_SYNC},
    E: {Event.JOIN_PHASE_DONE_EMPTY},
    D: {Event.DELETE},
}


@given(st.lists(st.sampled_from(list(Event)), max_size=60))
def test_random_event_sequences_follow_the_protocol(events):
    state = E
    generation_changes = 0
    for event in events:
        outcome = transition(state, event)
        if outcome.next is not state:
            assert event in _ENTRIES[outcome.next], (state, event, outcome)
            # A rebalance can only be completed from the join phase, an assignment only after it.
            if outcome.next is C:
                assert state is P
                generation_changes += 1
            if outcome.next is S:
                assert state is C
            if outcome.next is D:
                assert state is E
        state = outcome.next
    if Event.DELETE in events and state is not D:
        # DELETE was refused every time: the group was never empty when it came.
        assert all(transition(s, Event.DELETE).error for s in (P, C, S))
