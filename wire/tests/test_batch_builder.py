"""wire/batch_builder.py: batches the broker builds, read back by our decoder and kafka-python's."""

import pytest
from kafka.record.memory_records import MemoryRecords

from wire.batch_builder import build_batch, build_batches, build_record_batch
from wire.record_batch import crc_matches, parse_header, validate_produced
from wire.records import iter_records


def test_build_batch_is_a_valid_producer_batch():
    batch = build_batch([(b"k", b"v"), (None, None)], 1234)
    header = validate_produced(batch, 1 << 20)
    assert (header.record_count, header.base_timestamp, header.max_timestamp) == (2, 1234, 1234)
    assert [(r.offset, r.key, r.value) for r in iter_records(batch)] == [(0, b"k", b"v"), (1, None, None)]


def test_record_batch_keeps_offsets_timestamps_headers_and_its_span():
    records = [(41, 1000, b"k", b"v", (("h", b"x"), ("n", None))), (44, 1500, b"k", None, ())]
    batch = build_record_batch(41, 49, records)
    assert crc_matches(batch, 0, len(batch))
    header = parse_header(batch)
    assert (header.base_offset, header.last_offset, header.record_count) == (41, 49, 2)
    ours = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in iter_records(batch)]
    assert ours == [(o, t, k, v, tuple(h)) for o, t, k, v, h in records]
    theirs = MemoryRecords(bytes(batch)).next_batch()
    assert [(r.offset, r.timestamp, r.headers) for r in theirs] == [(41, 1000, [("h", b"x"), ("n", None)]),
                                                                    (44, 1500, [])]
    assert theirs.next_offset == 50  # a consumer continues after the span, not after offset 44


def test_empty_record_batch_spans_a_gap():
    batch = build_record_batch(7, 19, [])
    assert crc_matches(batch, 0, len(batch))
    theirs = MemoryRecords(bytes(batch)).next_batch()
    assert list(theirs) == [] and theirs.next_offset == 20


def test_records_outside_the_span_are_refused():
    with pytest.raises(ValueError):
        build_record_batch(10, 12, [(13, 0, b"k", b"v", ())])
    with pytest.raises(ValueError):
        build_record_batch(10, 9, [])


KAFKA_MAX_MESSAGE_BYTES = 1048588  # message.max.bytes' default


def test_two_half_megabyte_records_go_as_two_batches_under_the_limit():
    """Together they would be 1,048,641 bytes, past the default limit: `twinlog produce` of two
    524,280-byte lines was answered MESSAGE_TOO_LARGE (issue 37)."""
    records = [(None, b"a" * 524_280), (None, b"b" * 524_280)]
    assert len(build_batch(records, 5)) > KAFKA_MAX_MESSAGE_BYTES
    batches = build_batches(records, 5, KAFKA_MAX_MESSAGE_BYTES)
    assert [count for _b, count in batches] == [1, 1]
    for (batch, _n), (_k, value) in zip(batches, records):
        validate_produced(batch, KAFKA_MAX_MESSAGE_BYTES)
        assert [(r.offset, r.value) for r in iter_records(batch)] == [(0, value)]


@pytest.mark.parametrize("limit", [200, 1000, 4096, KAFKA_MAX_MESSAGE_BYTES])
def test_batches_keep_every_record_in_order_and_stay_within_the_limit(limit):
    records = [(f"k{i}".encode(), bytes([i % 256]) * (i * 7 % 300), (("h", b"v"),)) for i in range(400)]
    batches = build_batches(records, 9, limit)
    assert sum(n for _b, n in batches) == 400
    got = [(r.key, r.value, tuple(r.headers)) for batch, _n in batches for r in iter_records(batch)]
    assert got == records
    for batch, n in batches:
        assert n == 1 or len(batch) <= limit
        assert validate_produced(batch, 1 << 20).record_count == n
    assert len(batches) == 1 if limit == KAFKA_MAX_MESSAGE_BYTES else len(batches) > 1


def test_a_record_past_the_limit_goes_alone():
    batches = build_batches([(None, b"x"), (None, b"y" * 500), (None, b"z")], 1, 300)
    assert [n for _b, n in batches] == [1, 1, 1] and len(batches[1][0]) > 300
