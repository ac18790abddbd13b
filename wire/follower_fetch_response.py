"""A follower's Fetch v12 answer written straight to bytes and record regions, not through
kio's generic entity writer.

Why: the leader answers each follower once per batch or two; at 1 KB records and one
partition, kio's walk of the response (the dataclass per partition, the int type checks) was
~12% of the leader's samples under RF=3 acks=all (py-spy), for a response whose only bulk is
record regions that go out by sendfile anyway. The layout is the one fetch_response_view.py
reads (Kafka's FetchResponse.json at v12, flexible):

    throttle_time_ms i32 | error_code i16 | session_id i32
    responses compact [ topic compact string
                        partitions compact [ partition_index i32 | error_code i16
                                             high_watermark i64 | last_stable_offset i64
                                             log_start_offset i64
                                             aborted_transactions compact nullable (null)
                                             preferred_read_replica i32 (-1)
                                             records compact nullable bytes | tags (none) ]
                        tags ]
    tags

A follower reads uncommitted records, so it gets no aborted transactions (null), and v12 has
none of the tagged fields a follower would need (current_leader is v16+ here). The record
bytes are the regions themselves, never copied. wire/tests/test_follower_fetch_response.py
holds the output equal to kio's.
"""

from __future__ import annotations

import struct
from typing import Sequence

from kio.schema.errors import ErrorCode

from .body_writer import NO_TAGS, uvarint
from .protocol import EncodedBody, RecordRegions

VERSION = 12
_TOP = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id
_PARTITION = struct.Struct(">ihqqqBi")  # index, error, HW, LSO, log start, null aborted (0), preferred replica

# (partition index, error code, high watermark, last stable offset, log start offset, record regions)
PartitionAnswer = tuple[int, ErrorCode, int, int, int, list]


class FollowerFetchBody(EncodedBody):
    """The body, with what the metrics count of it (observability/metrics.py)."""

    __slots__ = ("record_bytes", "failed")

    def __init__(self, pieces: list, errors: list[ErrorCode], record_bytes: int,
                 failed: list[tuple[str, ErrorCode]]) -> None:
        super().__init__(pieces, errors, None)  # followers have no quota: no throttle to patch
        self.record_bytes = record_bytes  # replication bytes out
        self.failed = failed  # (topic, error) of each partition answered with an error


def follower_fetch_response(session_id: int,
                            topics: Sequence[tuple[str, Sequence[PartitionAnswer]]]) -> FollowerFetchBody:
    """The response body, as pieces for ChunkWriter: bytes, and the regions between them."""
    pieces: list = []
    errors: list[ErrorCode] = []
    failed: list[tuple[str, ErrorCode]] = []
    record_bytes = 0
    out = bytearray(_TOP.pack(0, 0, session_id))
    out += uvarint(len(topics) + 1)
    for name, partitions in topics:
        encoded = name.encode()
        out += uvarint(len(encoded) + 1)
        out += encoded
        out += uvarint(len(partitions) + 1)
        for index, code, high_watermark, last_stable, log_start, regions in partitions:
            if code is not ErrorCode.none:
                errors.append(code)
                failed.append((name, code))
            out += _PARTITION.pack(index, code.value, high_watermark, last_stable, log_start, 0, -1)
            records = RecordRegions(regions)
            out += uvarint(records.total + 1)
            record_bytes += records.total
            if records.total:
                pieces.append(out)
                pieces.append(records)
                out = bytearray()
            out += NO_TAGS
        out += NO_TAGS
    out += NO_TAGS
    pieces.append(out)
    return FollowerFetchBody(pieces, errors, record_bytes, failed)
