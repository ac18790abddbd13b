"""A follower's Fetch v12 response, read in place: the record bytes stay where they were
received, a memoryview of the frame, instead of kio's copy of each partition's records.

The response frame, as inter_broker.fetch_request asks for it (flexible: compact arrays and
strings carry their length + 1 as an unsigned varint, 0 meaning null; each struct ends in
tagged fields):

    correlation_id i32 | header tagged fields
    throttle_time_ms i32 | error_code i16 | session_id i32
    responses [ topic string
                partitions [ partition_index i32 | error_code i16 | high_watermark i64
                             last_stable_offset i64 | log_start_offset i64
                             aborted_transactions nullable [ producer_id i64 | first_offset i64 | tags ]
                             preferred_read_replica i32 | records nullable bytes | tags ]
                tags ]
    tags

Tagged fields are skipped whatever they hold (a v12 leader may add diverging_epoch,
current_leader or snapshot_id; this follower truncates through OffsetForLeaderEpoch instead).
Every byte must belong to the response, as client_codec.decode_response requires.
"""

from __future__ import annotations

import struct

from kio.schema.errors import ErrorCode

from .framing import PeerProtocolError
from .inter_broker import FetchPartitionResponse
from .protocol import skip_tagged_fields
from .varint import MalformedVarint, read_varint

_TOP = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id
_PARTITION = struct.Struct(">ihqqq")  # partition_index, error_code, high_watermark, last_stable, log_start
_ABORTED = 16  # producer_id i64 + first_offset i64
_I32 = struct.Struct(">i")


def _error(code: int) -> ErrorCode:
    try:
        return ErrorCode(code)
    except ValueError:  # a code newer than this broker knows
        return ErrorCode.unknown_server_error


def read_fetch_response_frame(frame) -> tuple[ErrorCode, int, list[FetchPartitionResponse]]:
    """(top-level error, session id, one entry per partition) of a Fetch v12 response
    frame (without its size prefix); each entry's records are a memoryview of `frame`. Raises
    PeerProtocolError."""
    view = memoryview(frame)
    end = len(view)
    try:
        pos = skip_tagged_fields(view, _I32.size)
        _throttle, top_error, session_id = _TOP.unpack_from(view, pos)
        pos += _TOP.size
        out: list[FetchPartitionResponse] = []
        topics, pos = _length(view, pos, end)
        for _ in range(topics):
            size, pos = _length(view, pos, end)
            topic = str(view[pos : pos + size], "utf-8")
            pos += size
            partitions, pos = _length(view, pos, end)
            for _ in range(partitions):
                index, error, high_watermark, _lso, log_start = _PARTITION.unpack_from(view, pos)
                pos += _PARTITION.size
                aborted, pos = _length(view, pos, end)
                for _ in range(aborted):  # each aborted transaction ends in its own tagged fields
                    pos = skip_tagged_fields(view, pos + _ABORTED)
                pos += 4  # preferred_read_replica
                size, pos = _length(view, pos, end)
                if pos + size > end:
                    raise PeerProtocolError("Fetch response: records run past the end of the frame")
                records = view[pos : pos + size]
                pos = skip_tagged_fields(view, pos + size)
                out.append(FetchPartitionResponse(topic, index, _error(error), high_watermark, log_start, records))
            pos = skip_tagged_fields(view, pos)
        pos = skip_tagged_fields(view, pos)
    except (struct.error, MalformedVarint, UnicodeDecodeError) as exc:
        raise PeerProtocolError(f"malformed Fetch v12 response: {exc}") from None
    if pos != end:
        raise PeerProtocolError(f"Fetch v12 response: {end - pos} bytes left after the response")
    return _error(top_error), session_id, out


def _length(view, pos: int, end: int) -> tuple[int, int]:
    """A compact array's or string's length (null counts as 0) and where its items start."""
    n, pos = read_varint(view, pos, end, unsigned=True)
    return max(n - 1, 0), pos
