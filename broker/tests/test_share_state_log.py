"""The `__share_group_state` records (broker/groups/share/state_log.py): keys and values round-trip,
every cut or corrupted value is refused, the coordinator key is Kafka's text with Kafka's
partition, a write's batches are laid over the kept ones as a per-offset model says, and a summary
counts the records done with as that model does."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, strategies as st

from broker.groups.share import state_log
from broker.groups.share.share_partition import RecordState, StateRange
from broker.groups.share.state_log import BadRecord, ShareState

STATES = st.sampled_from(sorted(state_log.STORED_STATES))


@st.composite
def ranges(draw, max_size: int = 8) -> tuple[StateRange, ...]:
    """Ascending, non-overlapping ranges."""
    out, at = [], draw(st.integers(0, 50))
    for _ in range(draw(st.integers(0, max_size))):
        first = at + draw(st.integers(0, 5))
        last = first + draw(st.integers(0, 6))
        out.append(StateRange(first, last, draw(STATES), draw(st.integers(0, 10))))
        at = last + 1
    return tuple(out)


states = st.builds(ShareState, st.integers(0, 2**31 - 1), st.integers(-1, 2**31 - 1), st.integers(-1, 2**62),
                   ranges(), st.integers(0, 2**31 - 1), st.integers(0, 2**62), st.integers(0, 2**62))
keys = st.tuples(st.text(min_size=1, max_size=20), st.uuids(), st.integers(0, 2**31 - 1))


@given(keys, states)
def test_keys_and_values_round_trip(key, state):
    assert state_log.decode_key(state_log.encode_key(key)) == key
    assert state_log.decode_value(state_log.encode_value(state)) == state


@given(states)
def test_every_cut_value_is_refused(state):
    data = state_log.encode_value(state)
    for end in range(len(data)):
        with pytest.raises(BadRecord):
            state_log.decode_value(data[:end])


def test_a_batch_in_a_state_never_stored_is_refused():
    data = bytearray(state_log.encode_value(ShareState(0, 0, 0, (StateRange(1, 2, RecordState.ARCHIVED, 1),))))
    state_at = 2 + 3 * 4 + 3 * 8 + 1 + 2 * 8  # version, epochs, offsets and times, count, first, last
    assert data[state_at] == RecordState.ARCHIVED
    data[state_at] = RecordState.ACQUIRED
    with pytest.raises(BadRecord, match="state 1"):
        state_log.decode_value(bytes(data))


def test_the_coordinator_key_is_kafkas_text_and_partition():
    key = ("g", uuid.UUID(int=1), 3)
    text = state_log.coordinator_key(key)
    assert text == "g:AAAAAAAAAAAAAAAAAAAAAQ:3"  # Kafka's Uuid.toString: URL-safe base64, no padding
    assert state_log.is_coordinator_key(text) and state_log.is_coordinator_key("a:b:" + text)
    assert not state_log.is_coordinator_key("g:nope:3") and not state_log.is_coordinator_key("g:AAAAAAAAAAAAAAAAAAAAAQ:-1")
    assert state_log.partition_for("hello", 50) == 99162322 % 50  # Java's "hello".hashCode()


def _model(kept, written, start) -> dict[int, tuple]:
    offsets = {}
    for r in (*kept, *written):
        for o in range(r.first, r.last + 1):
            offsets[o] = (r.state, r.delivery_count)
    return {o: v for o, v in offsets.items() if o >= start}


@given(ranges(), st.lists(ranges(max_size=3), max_size=3), st.integers(0, 120))
def test_a_write_lies_over_what_is_kept(kept, written_lists, start):
    written = tuple(r for rs in written_lists for r in rs)  # overlapping each other too
    got = state_log.overlay(kept, written, start)
    assert _model(got, (), 0) == _model(kept, written, start)
    assert all(a.last < b.first for a, b in zip(got, got[1:]))
    assert all(not (a.last + 1 == b.first and (a.state, a.delivery_count) == (b.state, b.delivery_count))
               for a, b in zip(got, got[1:])), "neighbours of one state and count are one batch"


@given(ranges(), st.integers(0, 60))
def test_a_summary_counts_the_records_past_the_start_that_are_done_with(kept, start):
    state = ShareState(3, 2, start, state_log.overlay(kept, (), start))
    done = {o for r in kept for o in range(max(r.first, start), r.last + 1) if r.state is not RecordState.AVAILABLE}
    assert state_log.summary_of(state) == state_log.StateSummary(3, 2, start, len(done))


def test_a_summary_of_no_state_has_no_count():
    assert state_log.summary_of(ShareState(0, -1, -1, ())) == state_log.StateSummary(0, -1, -1, -1)
