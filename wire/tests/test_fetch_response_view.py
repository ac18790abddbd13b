"""The in-place Fetch v12 reader against kio's (the oracle): any response the broker's encoder
writes reads back the same, records as views of the frame; a frame cut or padded is refused."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from wire.client_codec import decode_response
from wire.fetch_response_view import read_fetch_response_frame
from wire.framing import PeerProtocolError
from wire.protocol import RequestHeader, encode_response, response_class

CLS = response_class(1, 12)
MOD = __import__(CLS.__module__, fromlist=["PartitionData"])
ERRORS = [ErrorCode.none, ErrorCode.offset_out_of_range, ErrorCode.not_leader_or_follower,
          ErrorCode.fenced_leader_epoch]

partitions = st.builds(
    lambda index, error, hw, aborted, records, epoch: MOD.PartitionData(
        partition_index=index, error_code=error, high_watermark=hw, last_stable_offset=hw, log_start_offset=0,
        aborted_transactions=None if aborted is None else tuple(
            MOD.AbortedTransaction(producer_id=p, first_offset=o) for p, o in aborted),
        preferred_read_replica=-1, records=records,
        # a tagged field a leader may add (current_leader, written only when not its default)
        current_leader=MOD.LeaderIdAndEpoch(leader_id=epoch, leader_epoch=epoch) if epoch >= 0
        else MOD.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)),
    st.integers(0, 2**31 - 1), st.sampled_from(ERRORS), st.integers(-1, 2**62),
    st.none() | st.lists(st.tuples(st.integers(0, 2**62), st.integers(0, 2**62)), max_size=3),
    st.none() | st.binary(max_size=200), st.integers(-1, 5))
topics = st.builds(lambda name, parts: MOD.FetchableTopicResponse(topic=name, partitions=tuple(parts)),
                   st.text(min_size=1, max_size=20), st.lists(partitions, max_size=4))
responses = st.builds(lambda error, ts: CLS(throttle_time=datetime.timedelta(0), error_code=error, session_id=0,
                                            responses=tuple(ts)),
                      st.sampled_from(ERRORS), st.lists(topics, max_size=3))


def served(body) -> bytes:
    """The frame as the broker sends it, without its size prefix."""
    header = RequestHeader(1, 12, 9, "c", flexible=True)
    return b"".join(bytes(c) for c in encode_response(header, body))[4:]


@settings(max_examples=150, deadline=None)
@given(responses)
def test_reads_what_kio_reads(body):
    frame = served(body)
    oracle = decode_response(frame, 1, 12)
    top, _session, parts = read_fetch_response_frame(bytearray(frame))
    assert top is oracle.error_code
    assert [(p.topic, p.partition, p.error, p.high_watermark, p.log_start_offset, bytes(p.records)) for p in parts] == [
        (t.topic, q.partition_index, q.error_code, q.high_watermark, q.log_start_offset, q.records or b"")
        for t in oracle.responses for q in t.partitions]


def test_records_are_a_view_of_the_frame_not_a_copy():
    body = CLS(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, session_id=0, responses=(
        MOD.FetchableTopicResponse(topic="t", partitions=(MOD.PartitionData(
            partition_index=0, error_code=ErrorCode.none, high_watermark=1, last_stable_offset=1, log_start_offset=0,
            aborted_transactions=None, preferred_read_replica=-1, records=b"batch bytes"),)),))
    frame = bytearray(served(body))
    (part,) = read_fetch_response_frame(frame)[2]
    frame[frame.index(b"batch")] = ord("B")
    assert bytes(part.records) == b"Batch bytes"


@pytest.mark.parametrize("cut", ["trailing", "short", "garbage"])
def test_a_frame_that_does_not_parse_exactly_is_the_peers_fault(cut):
    body = CLS(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, session_id=0, responses=(
        MOD.FetchableTopicResponse(topic="t", partitions=(MOD.PartitionData(
            partition_index=0, error_code=ErrorCode.none, high_watermark=1, last_stable_offset=1, log_start_offset=0,
            aborted_transactions=None, preferred_read_replica=-1, records=b"xyz"),)),))
    frame = served(body)
    bad = {"trailing": frame + b"\x00", "short": frame[:-3], "garbage": frame[:5] + b"\xff" * 8}[cut]
    with pytest.raises(PeerProtocolError):
        read_fetch_response_frame(bad)
