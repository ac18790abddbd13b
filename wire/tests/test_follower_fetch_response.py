"""wire/follower_fetch_response.py writes exactly the bytes kio's generic writer writes for a
follower's Fetch v12 answer, with the record regions left as regions (kio's schema is the
reference), and fetch_response_view.py reads them back."""

from __future__ import annotations

import datetime
import struct
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from wire.fetch_response_view import read_fetch_response_frame
from wire.follower_fetch_response import VERSION, follower_fetch_response
from wire.protocol import ChunkWriter, RecordRegions, response_class

int64 = st.integers(-1, 2**63 - 1)
codes = st.sampled_from([ErrorCode.none, ErrorCode.not_leader_or_follower, ErrorCode.offset_out_of_range,
                         ErrorCode.fenced_leader_epoch])
regions = st.lists(st.binary(min_size=1, max_size=300), max_size=3)
partitions = st.lists(st.tuples(st.integers(0, 2**31 - 1), codes, int64, int64, int64, regions), max_size=4)
topics = st.lists(st.tuples(st.text(min_size=1, max_size=20), partitions), max_size=3)


def _kio(session_id: int, topics_) -> ChunkWriter:
    cls = response_class(1, VERSION)
    module = sys.modules[cls.__module__]
    body = cls(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, session_id=session_id,
               responses=tuple(module.FetchableTopicResponse(topic=name, partitions=tuple(
                   module.PartitionData(partition_index=i, error_code=code, high_watermark=hw,
                                        last_stable_offset=lso, log_start_offset=start, aborted_transactions=None,
                                        preferred_read_replica=-1, records=RecordRegions(rs))
                   for i, code, hw, lso, start, rs in parts)) for name, parts in topics_))
    out = ChunkWriter()
    entity_writer(cls)(out, body)
    return out


def _ours(session_id: int, topics_) -> tuple[ChunkWriter, object]:
    body = follower_fetch_response(session_id, topics_)
    out = ChunkWriter()
    for piece in body.pieces():
        out.write(piece)
    return out, body


def _flat(chunks: list) -> bytes:
    return b"".join(bytes(c) for c in chunks)


@settings(max_examples=300)
@given(st.integers(0, 2**31 - 1), topics)
def test_the_bytes_are_kios_and_the_regions_stay_regions(session_id, topics_):
    kio, (ours, body) = _kio(session_id, topics_).finish(), _ours(session_id, topics_)
    ours = ours.finish()
    assert _flat(ours) == _flat(kio)
    region_ids = [id(r) for _, parts in topics_ for *_, rs in parts for r in rs]
    assert [id(c) for c in ours if id(c) in region_ids] == region_ids  # each region sent as it is
    assert body.record_bytes == sum(len(r) for _, parts in topics_ for *_, rs in parts for r in rs)
    assert body.failed == [(name, code) for name, parts in topics_ for _, code, *_ in parts
                           if code is not ErrorCode.none]


def test_the_follower_reads_it_back():
    topics_ = [("t", [(0, ErrorCode.none, 7, 7, 0, [b"abc", b"de"]), (3, ErrorCode.offset_out_of_range, -1, -1, -1, [])]),
               ("u", [])]
    ours, _ = _ours(42, topics_)
    frame = struct.pack(">i", 9) + b"\x00" + _flat(ours.finish())  # correlation id, header tags
    error, session_id, parts = read_fetch_response_frame(frame)
    assert (error, session_id) == (ErrorCode.none, 42)
    assert [(p.topic, p.partition, p.error, p.high_watermark, bytes(p.records)) for p in parts] == [
        ("t", 0, ErrorCode.none, 7, b"abcde"), ("t", 3, ErrorCode.offset_out_of_range, -1, b"")]
