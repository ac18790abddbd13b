"""The client side of the codec against the server side (protocol.py) and hand-packed headers."""

from __future__ import annotations

import datetime
import struct

import pytest
from kio.schema.errors import ErrorCode
from wire.client_codec import decode_response, encode_request, response_correlation_id
from wire.fetch_response_view import read_fetch_response_frame
from wire.framing import PeerProtocolError
from wire.inter_broker import (
    EpochRequest,
    FetchPartitionRequest,
    fetch_request,
    offset_for_leader_epoch_request,
    read_offset_for_leader_epoch_response,
)
from wire.protocol import RequestHeader, _reader, decode_request, encode_response, request_class, response_class

FETCH_PARTS = [FetchPartitionRequest("a", 0, 3, 100, 7), FetchPartitionRequest("b", 2, 3, 5, 0),
               FetchPartitionRequest("a", 1, 4, 0, 0)]


def test_a_flexible_request_has_header_v2_and_the_server_reads_it_back():
    body = fetch_request(replica_id=2, max_wait_ms=500, min_bytes=1, max_bytes=10 << 20,
                         partition_max_bytes=1 << 20, isolation_level=0, partitions=FETCH_PARTS)
    frame = encode_request(body, correlation_id=77, client_id="broker-2-fetcher")
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    client = b"broker-2-fetcher"
    assert frame[4:4 + 10 + len(client) + 1] == struct.pack(">hhih", 1, 12, 77, len(client)) + client + b"\x00"
    header, decoded = decode_request(frame[4:])
    assert (header.api_key, header.api_version, header.correlation_id) == (1, 12, 77)
    assert header.client_id == "broker-2-fetcher"
    assert decoded == body
    assert decoded.replica_id == 2 and decoded.max_wait == datetime.timedelta(milliseconds=500)
    assert decoded.session_id == 0 and decoded.session_epoch == -1
    # Grouped by topic in first-seen order, partition order kept within a topic.
    assert [(t.topic, [p.partition for p in t.partitions]) for t in decoded.topics] == [("a", [0, 1]), ("b", [2])]
    first = decoded.topics[0].partitions[0]
    assert (first.current_leader_epoch, first.fetch_offset, first.log_start_offset, first.partition_max_bytes,
            first.last_fetched_epoch) == (3, 100, 7, 1 << 20, -1)


def test_a_non_flexible_request_has_header_v1_and_a_null_client_id():
    cls = request_class(3, 8)  # Metadata v8: the last version before flexible ones
    body = cls(topics=None, allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
               include_topic_authorized_operations=False)
    frame = encode_request(body, correlation_id=5, client_id=None)
    assert frame[4:14] == struct.pack(">hhih", 3, 8, 5, -1)
    header, decoded = decode_request(frame[4:])
    assert header.client_id is None and not header.flexible and decoded == body


def test_offset_for_leader_epoch_v4_carries_the_replica_id():
    body = offset_for_leader_epoch_request(3, [EpochRequest("a", 0, 9, 8), EpochRequest("a", 1, 9, -1)])
    frame = encode_request(body, correlation_id=1, client_id="x")
    assert frame[4:4 + 11 + 1] == struct.pack(">hhih", 23, 4, 1, 1) + b"x" + b"\x00"
    decoded, size = _reader(type(body))(frame, 4 + 12)
    assert 4 + 12 + size == len(frame)
    assert decoded.replica_id == 3
    assert [(p.partition, p.current_leader_epoch, p.leader_epoch) for p in decoded.topics[0].partitions] == [
        (0, 9, 8), (1, 9, -1)]


def _served(api_key: int, version: int, correlation_id: int, body) -> bytes:
    """What the broker's encoder puts on the wire for `body`, without the size prefix."""
    header = RequestHeader(api_key, version, correlation_id, "c", flexible=True)
    return b"".join(bytes(c) for c in encode_response(header, body))[4:]


def _fetch_response(records: bytes):
    cls = response_class(1, 12)
    mod = __import__(cls.__module__, fromlist=["PartitionData"])
    part = mod.PartitionData(partition_index=0, error_code=ErrorCode.offset_out_of_range, high_watermark=40,
                             last_stable_offset=40, log_start_offset=10, aborted_transactions=None,
                             preferred_read_replica=-1, records=records)
    return cls(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, session_id=0,
               responses=(mod.FetchableTopicResponse(topic="a", partitions=(part,)),))


def test_the_servers_fetch_response_reads_back_as_plain_values():
    frame = _served(1, 12, 9, _fetch_response(b"\x01\x02\x03"))
    assert response_correlation_id(frame) == 9
    top, _session, parts = read_fetch_response_frame(frame)
    assert top is ErrorCode.none
    assert [tuple(p) for p in parts] == [("a", 0, ErrorCode.offset_out_of_range, 40, 10, b"\x01\x02\x03")]


def test_the_servers_offset_for_leader_epoch_response_reads_back():
    cls = response_class(23, 4)
    mod = __import__(cls.__module__, fromlist=["EpochEndOffset"])
    body = cls(throttle_time=datetime.timedelta(0), topics=(mod.OffsetForLeaderTopicResult(topic="a", partitions=(
        mod.EpochEndOffset(error_code=ErrorCode.none, partition=0, leader_epoch=4, end_offset=120),
        mod.EpochEndOffset(error_code=ErrorCode.fenced_leader_epoch, partition=1, leader_epoch=-1, end_offset=-1),
    )),))
    got = read_offset_for_leader_epoch_response(decode_response(_served(23, 4, 1, body), 23, 4))
    assert [tuple(r) for r in got] == [("a", 0, ErrorCode.none, 4, 120), ("a", 1, ErrorCode.fenced_leader_epoch, -1, -1)]


def test_api_versions_answers_with_header_v0_even_when_flexible():
    cls = response_class(18, 3)
    body = cls(error_code=ErrorCode.unsupported_version, api_keys=(), throttle_time=datetime.timedelta(0))
    frame = _served(18, 3, 2, body)
    assert frame[4:6] == b"\x00\x23"  # the body right after the correlation id: no tag byte to skip
    assert decode_response(frame, 18, 3) == body


@pytest.mark.parametrize("cut", ["trailing", "short", "garbage", "no correlation id"])
def test_a_response_that_does_not_parse_exactly_is_the_peers_fault(cut):
    frame = _served(1, 12, 9, _fetch_response(b"xyz"))
    bad = {"trailing": frame + b"\x00", "short": frame[:-3], "garbage": frame[:5] + b"\xff" * 8,
           "no correlation id": frame[:3]}[cut]
    with pytest.raises(PeerProtocolError):
        if cut == "no correlation id":
            response_correlation_id(bad)
        else:
            decode_response(bad, 1, 12)
