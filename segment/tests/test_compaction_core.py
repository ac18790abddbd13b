"""The shared compaction core: batch filtering, the offset map and the cleaning rules.

Batches come from kafka-python's own record batch builder (a real client's encoder, every
codec) and the filtered ones are read back with its reader, so neither side of a round trip
is ours alone.
"""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from segment.compaction.batch_filter import Outcome, filter_batch
from segment.compaction.cleaning_policy import (
    SegmentStats, first_uncleanable_offset, is_due, last_batches_of_producers, record_survives,
    retention_deletes, tombstones_expired,
)
from segment.compaction.offset_map import ENTRY_OVERHEAD_BYTES, OffsetMap
from segment.tests.compaction_batches import RAW_SNAPPY, client_batch
from wire import records as wire_records
from wire.record_batch import HEADER_SIZE, iter_batches, parse_header

def read_back(data: bytes):
    batch = DefaultRecordBatch(bytearray(data))
    assert batch.validate_crc()
    return batch, [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


keys = st.one_of(st.none(), st.sampled_from([b"a", b"b", b"c", b"k" * 300]))
# compressible, or kafka-python sends the batch uncompressed
values = st.one_of(st.none(), st.builds(lambda part, n: part * n, st.binary(min_size=1, max_size=4), st.integers(1, 60)))
headers = st.lists(st.tuples(st.sampled_from(["h", "trace"]), st.one_of(st.none(), st.binary(max_size=8))),
                   max_size=2)
records = st.lists(st.tuples(keys, values, headers), min_size=1, max_size=40)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(recs=records, codec=st.sampled_from([0, 1, 2, 3, 4, RAW_SNAPPY]), data=st.data(),
       producer=st.sampled_from([(-1, -1, -1), (7, 3, 100)]), base=st.integers(0, 2**40))
def test_filter_batch_round_trip(recs, codec, data, producer, base):
    batch = client_batch(recs, codec=codec, base_offset=base, producer=producer)
    mask = data.draw(st.lists(st.booleans(), min_size=len(recs), max_size=len(recs)))
    retain_empty = data.draw(st.booleans())
    result = filter_batch(batch, lambda r: mask[r.offset - base], retain_empty=retain_empty)
    original, all_records = read_back(batch)
    event(f"codec {original.compression_type}")
    expected = [r for r, k in zip(all_records, mask) if k]
    assert (result.records_kept, result.records_dropped) == (len(expected), len(recs) - len(expected))
    if all(mask):
        assert result.outcome is Outcome.KEPT and result.data == batch  # copied, never re-encoded
        return
    if not expected:
        assert result.outcome is (Outcome.EMPTIED if retain_empty else Outcome.DROPPED)
        if not retain_empty:
            assert result.data == b""
            return
    else:
        assert result.outcome is Outcome.REWRITTEN
    rebuilt, kept_records = read_back(result.data)
    assert kept_records == expected  # original offsets, timestamps, keys, values, headers
    assert list(iter_batches(result.data))[0][1].size == len(result.data)
    for field in ("base_offset", "last_offset_delta", "producer_id", "producer_epoch", "base_sequence",
                  "is_transactional", "timestamp_type"):
        assert getattr(rebuilt, field) == getattr(original, field), field
    if expected:
        assert rebuilt.compression_type == original.compression_type
        assert rebuilt.max_timestamp == max(r[1] for r in expected)
    else:
        assert rebuilt.compression_type == 0 and rebuilt.max_timestamp == original.max_timestamp
    if original.compression_type == 2 and expected:  # the framing the producer used
        xerial = b"\x82SNAPPY\x00"
        assert (result.data[HEADER_SIZE:HEADER_SIZE + 8] == xerial) == (batch[HEADER_SIZE:HEADER_SIZE + 8] == xerial)


def test_empty_batch_from_an_earlier_clean_is_kept_only_when_asked():
    emptied = filter_batch(client_batch([(b"a", b"1", [])], producer=(7, 0, 0)), lambda r: False,
                           retain_empty=True).data
    assert filter_batch(emptied, lambda r: False, retain_empty=True).data == emptied
    assert filter_batch(emptied, lambda r: True, retain_empty=False).outcome is Outcome.DROPPED


@settings(max_examples=100)
@given(batches=st.lists(st.lists(st.tuples(st.sampled_from([b"x", b"y", b"z", None]), values), min_size=1,
                                 max_size=10), min_size=1, max_size=10))
def test_offset_map_latest_equals_a_dict(batches):
    offsets, oracle, base = OffsetMap(), {}, 0
    for recs in batches:
        assert offsets.add_batch(client_batch([(k, v, []) for k, v in recs], base_offset=base))
        for i, (k, _v) in enumerate(recs):
            if k is not None:
                oracle[k] = base + i
        base += len(recs)
    assert {k: offsets.latest(k) for k in (b"x", b"y", b"z")} == {k: oracle.get(k) for k in (b"x", b"y", b"z")}
    assert len(offsets) == len(oracle) and offsets.covered_end == base


def test_offset_map_refuses_a_batch_that_does_not_fit_and_stays_unchanged():
    offsets = OffsetMap(memory_bytes=2 * (1 + ENTRY_OVERHEAD_BYTES))
    assert offsets.add_batch(client_batch([(b"a", b"1", []), (b"b", b"2", [])]))
    assert offsets.add_batch(client_batch([(b"a", b"3", [])], base_offset=2))  # a known key costs nothing
    assert not offsets.add_batch(client_batch([(b"b", b"4", []), (b"c", b"5", [])], base_offset=3))
    assert (offsets.latest(b"a"), offsets.latest(b"b"), offsets.latest(b"c")) == (2, 1, None)
    assert offsets.covered_end == 3


def _rec(offset, key, value=b"v"):
    return wire_records.Record(offset, 0, key, value, ())


def test_record_survives():
    offsets = OffsetMap()
    offsets.add_batch(client_batch([(b"a", b"1", []), (b"b", None, []), (b"a", b"2", [])], base_offset=10))
    assert not record_survives(_rec(3, b"a"), offsets, end=13, drop_tombstones=False)  # superseded
    assert record_survives(_rec(12, b"a"), offsets, end=13, drop_tombstones=True)  # the latest
    assert record_survives(_rec(5, b"q"), offsets, end=13, drop_tombstones=True)  # key not in the dirty part
    assert not record_survives(_rec(5, None), offsets, end=13, drop_tombstones=False)  # keyless
    assert record_survives(_rec(11, b"b", None), offsets, end=13, drop_tombstones=False)
    assert not record_survives(_rec(11, b"b", None), offsets, end=13, drop_tombstones=True)
    # past the round's end (a last stable offset inside the segment rewritten) all stays
    assert record_survives(_rec(13, b"b", None), offsets, end=13, drop_tombstones=True)
    assert record_survives(_rec(14, None), offsets, end=13, drop_tombstones=True)


def test_when_a_log_is_due_and_where_cleaning_stops():
    segs = [SegmentStats(0, 100, 1000, 10, 50), SegmentStats(100, 200, 1000, 60, 90),
            SegmentStats(200, 300, 1000, 95, 990)]
    assert first_uncleanable_offset(segs, 300, now_ms=1000, min_compaction_lag_ms=0, last_stable_offset=300) == 300
    assert first_uncleanable_offset(segs, 300, now_ms=1000, min_compaction_lag_ms=50, last_stable_offset=300) == 200
    # an open transaction at 150 holds cleaning there, before the lag's segment
    assert first_uncleanable_offset(segs, 300, now_ms=1000, min_compaction_lag_ms=50, last_stable_offset=150) == 150
    assert is_due(segs, 0, 300, 1000, 0.5, 2**63 - 1)
    assert not is_due(segs, 200, 300, 1000, 0.5, 2**63 - 1)  # 1/3 dirty
    assert is_due(segs, 200, 300, 1000, 0.3, 2**63 - 1)
    assert is_due(segs, 200, 300, 1000, 0.5, 500)  # its oldest dirty record (95) is past max lag
    assert not is_due(segs, 300, 300, 1000, 0.0, 0)  # nothing dirty
    assert tombstones_expired(100, 1000, 899) and not tombstones_expired(100, 1000, 900)
    assert retention_deletes("compact,delete") and not retention_deletes("compact")


def test_last_batch_of_each_producer():
    batches = [client_batch([(b"a", b"1", [])], base_offset=0, producer=(7, 0, 0)),
               client_batch([(b"a", b"1", [])], base_offset=1, producer=(8, 0, 0)),
               client_batch([(b"a", b"1", [])], base_offset=2, producer=(7, 0, 1)),
               client_batch([(b"a", b"1", [])], base_offset=3)]
    assert last_batches_of_producers(parse_header(b) for b in batches) == {1, 2}
