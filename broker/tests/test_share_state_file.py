"""The share-partition state file (broker/groups/share/state_file.py): round trips, refusal of what
does not parse, and writes that keep the last stored state."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from hypothesis import given, strategies as st

from broker.groups.share.share_partition import RecordState, StateRange
from broker.groups.share.state_file import MalformedShareState, ShareStateFiles, decode, encode

KEPT = (RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@st.composite
def snapshots(draw):
    at = start = draw(st.integers(0, 1 << 40))
    ranges = []
    for _ in range(draw(st.integers(0, 8))):
        first = at + draw(st.integers(0, 5))
        last = first + draw(st.integers(0, 5))
        ranges.append(StateRange(first, last, draw(st.sampled_from(KEPT)), draw(st.integers(0, 10))))
        at = last + 1
    return draw(st.integers(0, 1000)), start, tuple(ranges)


@given(snapshots())
def test_encode_decode_round_trip(snapshot):
    assert decode(encode(snapshot)) == snapshot


@pytest.mark.parametrize("text", [
    "",
    "twinlog-share-state 2\n0 0 0\nend\n",
    "twinlog-share-state 1\n0 0 1\nend\n",  # a range missing
    "twinlog-share-state 1\n0 0 1\n0 3 2 1\n",  # cut before its end line
    "twinlog-share-state 1\n0 5 1\n2 3 2 1\nend\n",  # a range below the start
    "twinlog-share-state 1\n0 0 1\n0 3 1 1\nend\n",  # ACQUIRED is never written
])
def test_what_does_not_parse_is_refused(text):
    with pytest.raises(MalformedShareState):
        decode(text)


def test_saves_store_the_state_as_it_is_when_the_write_starts(tmp_path):
    files = ShareStateFiles(tmp_path)
    topic_id = uuid.uuid4()
    state = [(0, 0, ())]

    async def run():
        first = files.save("g/é", topic_id, 0, lambda: state[0])
        state[0] = (0, 7, (StateRange(9, 9, RecordState.ARCHIVED, 5),))
        await asyncio.gather(first, files.save("g/é", topic_id, 0, lambda: state[0]))

    asyncio.run(run())
    assert ShareStateFiles(tmp_path).load("g/é", topic_id, 0) == state[0]
    assert files.load("g/é", topic_id, 1) is None
