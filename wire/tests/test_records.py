"""wire/records.py against batches written by real producer code.

kafka-python's own builder writes the batches (its snappy is xerial-framed, as the
Java client's); librdkafka's raw snappy, the Java client's lz4/zstd stream flavours
and redpanda's little-endian xerial header are built by hand from their formats.
"""

import gzip
import struct

import cramjam
import crc32c
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from wire.record_batch import HEADER_SIZE, assign_offsets, set_log_append_time, validate_produced
from wire.records import (
    InvalidRecords,
    first_offset_at_or_after,
    iter_records,
    _walk_keys,
    offset_of_max_timestamp,
    record_keys,
)
from wire.tests.produced_records import CODECS, T0, compressible_records, expected

def build_batch(records, codec=0):
    """records: [(timestamp, key, value, headers)] -> one batch v2, offset deltas 0..n-1."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for offset_delta, (timestamp, key, value, headers) in enumerate(records):
        assert builder.append(offset_delta, timestamp, key, value, headers) is not None
    return bytes(builder.build())


def with_records_region(plain_batch, codec, region):
    """Swap in a records region compressed by hand; fix attributes, batchLength and CRC."""
    buf = bytearray(plain_batch[:HEADER_SIZE]) + region
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    (attrs,) = struct.unpack_from(">h", buf, 21)
    struct.pack_into(">h", buf, 21, (attrs & ~0x07) | codec)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def with_header_field(batch, offset, fmt, value):
    buf = bytearray(batch)
    struct.pack_into(fmt, buf, offset, value)
    return bytes(buf)


def xerial(region, block_size=32 * 1024, version_fmt=">ii"):
    out = bytearray(b"\x82SNAPPY\x00" + struct.pack(version_fmt, 1, 1))
    for start in range(0, len(region), block_size):
        block = bytes(cramjam.snappy.compress_raw(region[start : start + block_size]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def zigzag(n):
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def raw_record(body):
    return zigzag(len(body)) + body


def batch_of(record_bytes, count):
    """A header from kafka-python around hand-written (possibly hostile) record bytes."""
    plain = build_batch([(T0, None, b"x", [])])
    return with_header_field(with_records_region(plain, 0, record_bytes), 57, ">i", count)


def decode_all(batch, **kwargs):
    return list(iter_records(batch, **kwargs))


# --- every codec, kafka-python's builder ---------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_decodes_like_kafka_pythons_own_reader(codec):
    records = compressible_records()
    batch = build_batch(records, codec)
    assert batch[22] & 0x07 == codec  # the builder really compressed
    decoded = decode_all(batch)
    assert decoded == expected(records)
    theirs = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in DefaultRecordBatch(bytearray(batch))]
    assert [tuple(r) for r in decoded] == theirs


@pytest.mark.parametrize("codec", [1, 3, 4])
def test_output_larger_than_the_first_guess_still_decodes(codec):
    # ~1 MiB of records that compress far below a quarter: exercises the retry with a larger buffer.
    records = [(T0 + i, b"k", b"z" * 1000, []) for i in range(1000)]
    batch = build_batch(records, codec)
    assert batch[22] & 0x07 == codec and len(batch) * 4 < 1000 * 1000
    assert decode_all(batch) == expected(records)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_is_bounded(codec):
    batch = build_batch([(T0 + i, None, b"\0" * 10_000, []) for i in range(100)], codec)
    assert batch[22] & 0x07 == codec
    with pytest.raises(InvalidRecords, match="more than"):
        decode_all(batch, max_uncompressed_bytes=100_000)
    assert len(decode_all(batch, max_uncompressed_bytes=2_000_000)) == 100


keys = st.none() | st.binary(max_size=30) | st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=4), st.integers(1, 60))
header_lists = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=12)), max_size=3)
timestamps = st.integers(-1, 2**42)
record_lists = st.lists(st.tuples(timestamps, keys, keys, header_lists), min_size=1, max_size=25)


@settings(max_examples=150)
@given(record_lists, st.sampled_from(CODECS), st.integers(0, 2**62))
def test_round_trip(records, codec, base_offset):
    batch = bytearray(build_batch(records, codec))
    assign_offsets(batch, base_offset, leader_epoch=3)
    assert decode_all(batch) == expected(records, base_offset)


def test_log_append_time_gives_every_record_the_batch_max_timestamp():
    records = compressible_records(10)
    batch = bytearray(build_batch(records, 4))
    assign_offsets(batch, 500, 0)
    set_log_append_time(batch, T0 + 10**6)
    assert [r.timestamp for r in iter_records(batch)] == [T0 + 10**6] * 10
    assert first_offset_at_or_after(batch, T0 + 10**6) == (500, T0 + 10**6)
    assert first_offset_at_or_after(batch, T0 + 10**6 + 1) is None
    assert offset_of_max_timestamp(batch) == (500, T0 + 10**6)


def test_bytes_after_the_batch_are_ignored_and_views_work():
    first, second = build_batch(compressible_records(3)), build_batch(compressible_records(4), 1)
    assert decode_all(memoryview(first + second)) == expected(compressible_records(3))


def test_header_keys_with_bad_utf8_read_as_java_does():
    batch = build_batch([(T0, b"k", b"v", [("hk", b"x")])]).replace(b"hk", b"\xff\xfe")
    (record,) = decode_all(batch)
    assert record.headers == (("\ufffd\ufffd", b"x"),)


# --- the timestamp lookups against a linear-scan oracle ------------------------------------


def oracle_first_at_or_after(stamps, target, base, skip=0):
    return next(((base + i, ts) for i, ts in enumerate(stamps) if ts >= target and i >= skip), None)


def oracle_max(stamps, base):
    top = max(stamps)
    return base + stamps.index(top), top


@settings(max_examples=150)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=40), st.integers(-3, 45),
       st.sampled_from(CODECS), st.integers(0, 10**12), st.integers(0, 42))
def test_timestamp_lookups_match_a_linear_scan(deltas, target_delta, codec, base_offset, log_start_delta):
    stamps = [T0 + d for d in deltas]  # out of order, with duplicates: producers may do both
    batch = bytearray(build_batch([(ts, None, b"payload" * 5, []) for ts in stamps], codec))
    assign_offsets(batch, base_offset, 0)
    target = T0 + target_delta
    assert first_offset_at_or_after(batch, target) == oracle_first_at_or_after(stamps, target, base_offset)
    # a log start inside the batch (DeleteRecords): records below it are not answered
    assert (first_offset_at_or_after(batch, target, base_offset + log_start_delta)
            == oracle_first_at_or_after(stamps, target, base_offset, log_start_delta))
    assert offset_of_max_timestamp(batch) == oracle_max(stamps, base_offset)


def test_batch_below_the_target_is_not_opened():
    batch = build_batch([(T0, None, b"v", [])])
    garbage_records = with_header_field(batch, HEADER_SIZE, ">q", -1)
    assert first_offset_at_or_after(garbage_records, T0 + 1) is None
    with pytest.raises(InvalidRecords):
        first_offset_at_or_after(garbage_records, T0)


def test_empty_batch_has_no_max_timestamp_record():
    assert offset_of_max_timestamp(batch_of(b"", 0)) is None


# --- batches other producers write ----------------------------------------------------------


def plain_and_region(n=400):
    records = compressible_records(n)
    plain = build_batch(records)
    return records, plain, plain[HEADER_SIZE:]


SNAPPY_FLAVOURS = {
    "librdkafka raw block": lambda region: bytes(cramjam.snappy.compress_raw(region)),
    "java xerial, 32 KiB blocks": xerial,
    "xerial, tiny blocks": lambda region: xerial(region, block_size=1000),
    "redpanda xerial, little-endian version": lambda region: xerial(region, version_fmt="<ii"),
}
OTHER_FLAVOURS = {
    "java lz4: no content size, 64 KiB independent blocks": (3, lambda r: lz4.frame.compress(
        r, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, content_checksum=False, store_size=False)),
    "lz4 with block and content checksums": (3, lambda r: lz4.frame.compress(
        r, block_linked=False, block_checksum=True, content_checksum=True)),
    "java zstd stream: no content size": (4, lambda r: zstandard.ZstdCompressor(write_content_size=False).compress(r)),
    "zstd, two frames": (4, lambda r: zstandard.ZstdCompressor().compress(r[:1000]) + zstandard.ZstdCompressor().compress(r[1000:])),
    "stdlib gzip": (1, gzip.compress),
}


@pytest.mark.parametrize("flavour", list(SNAPPY_FLAVOURS))
def test_snappy_as_other_producers_write_it(flavour):
    records, plain, region = plain_and_region()
    batch = with_records_region(plain, 2, SNAPPY_FLAVOURS[flavour](region))
    validate_produced(batch, 1 << 20)
    assert decode_all(batch) == expected(records)
    assert len(list(DefaultRecordBatch(bytearray(batch)))) == len(records)  # an independent reader agrees


@pytest.mark.parametrize("flavour", list(OTHER_FLAVOURS))
def test_lz4_zstd_gzip_as_other_producers_write_them(flavour):
    records, plain, region = plain_and_region()
    codec, compress = OTHER_FLAVOURS[flavour]
    batch = with_records_region(plain, codec, compress(region))
    assert decode_all(batch) == expected(records)


# --- malformed input: InvalidRecords and nothing else ---------------------------------------


def assert_invalid_or_consistent(batch):
    """Either a clean InvalidRecords, or exactly recordCount records in offset order."""
    try:
        decoded = decode_all(batch)
    except InvalidRecords:
        return
    (count,) = struct.unpack_from(">i", batch, 57)
    assert len(decoded) == count


@pytest.mark.parametrize("codec", CODECS)
def test_every_prefix_is_rejected(codec):
    batch = build_batch(compressible_records(8), codec)
    for cut in range(len(batch)):
        with pytest.raises(InvalidRecords):
            decode_all(batch[:cut])


@pytest.mark.parametrize("codec", CODECS)
def test_every_cut_of_the_records_region_is_rejected(codec):
    batch = build_batch(compressible_records(8), codec)
    for cut in range(HEADER_SIZE, len(batch)):
        truncated = with_header_field(batch[:cut], 8, ">i", cut - 12)  # batchLength agrees with the cut
        with pytest.raises(InvalidRecords):
            decode_all(truncated)


@pytest.mark.parametrize("codec", CODECS)
def test_every_byte_flip_in_the_records_region(codec):
    batch = build_batch(compressible_records(6), codec)
    for pos in range(HEADER_SIZE, len(batch)):
        for mask in (0x01, 0x80, 0xFF):
            flipped = bytearray(batch)
            flipped[pos] ^= mask
            assert_invalid_or_consistent(bytes(flipped))


@settings(max_examples=300)
@given(st.binary(max_size=300), st.integers(-2, 2**31 - 1), st.sampled_from(CODECS))
def test_garbage_records_region(region, count, codec):
    plain = build_batch([(T0, None, b"x", [])])
    assert_invalid_or_consistent(with_header_field(with_records_region(plain, codec, region), 57, ">i", count))


GOOD = raw_record(b"\x00\x00\x00\x02k\x02v\x00")  # attrs, tsDelta 0, offsetDelta 0, key b"k", value b"v", 0 headers

HOSTILE = {  # case: (record bytes, what the error names)
    "key length 2^31-1": (raw_record(b"\x00\x00\x00" + zigzag(2**31 - 1) + b"k\x02v\x00"), "runs past"),
    "key length -2": (raw_record(b"\x00\x00\x00" + zigzag(-2) + b"\x02v\x00"), "runs past"),
    "record length 2^31-1": (zigzag(2**31 - 1) + b"\x00" * 10, "claims"),
    "record length below the minimum": (raw_record(b"\x00\x00\x00"), "claims"),
    "negative record length": (zigzag(-1) + b"\x00" * 10, "claims"),
    "six-byte varint": (b"\xff\xff\xff\xff\xff\x01" + b"\x00" * 10, "longer than 5"),
    "eleven-byte varlong": (raw_record(b"\x00" + b"\xff" * 10 + b"\x01\x00\x01\x01\x00"), "longer than 10"),
    "varint cut by the record end": (raw_record(b"\x00\x00\x00\x02k\x02v\x80"), "runs past"),
    "negative header count": (raw_record(b"\x00\x00\x00\x02k\x02v" + zigzag(-3)), "negative header count"),
    "header count 2^31-1": (raw_record(b"\x00\x00\x00\x02k\x02v" + zigzag(2**31 - 1) + b"\x02a\x02b"), "runs past"),
    "null header key": (raw_record(b"\x00\x00\x00\x02k\x02v\x02\x01\x02b"), "null key"),
    "bytes after the last field": (raw_record(b"\x00\x00\x00\x02k\x02v\x00\x00") + GOOD, "beyond its fields"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_record_fields(case):
    record_bytes, complaint = HOSTILE[case]
    assert decode_all(batch_of(GOOD, 1))[0].key == b"k"
    with pytest.raises(InvalidRecords, match=complaint):
        decode_all(batch_of(record_bytes, 1))


def test_overlong_varint_keeps_the_low_32_bits_as_java_does():
    # Java's ByteUtils.readVarint accumulates into an int: bits above 32 in a 5-byte varint vanish.
    offset_delta_1 = b"\x82\x80\x80\x80\x70"  # zigzag 2 plus high bits Java drops
    (record,) = decode_all(batch_of(raw_record(b"\x00\x00" + offset_delta_1 + b"\x02k\x02v\x00"), 1))
    assert record.offset == 1


@pytest.mark.parametrize("count", [-1, 0, 1, 3, 2**31 - 1])
def test_record_count_must_match_the_records(count):
    batch = batch_of(GOOD + GOOD, count)
    with pytest.raises(InvalidRecords, match="records|negative"):
        decode_all(batch)


def test_records_before_a_corrupt_one_are_yielded_first():
    records = iter_records(batch_of(GOOD + HOSTILE["null header key"][0], 2))
    assert next(records).value == b"v"
    with pytest.raises(InvalidRecords):
        next(records)


@pytest.mark.parametrize("offset, fmt, value", [
    (16, ">b", 1),            # magic
    (21, ">h", 5),            # codec 5
    (21, ">h", 7),            # codec 7
    (8, ">i", 48),            # batchLength shorter than the header
    (8, ">i", 10**6),         # torn
])
def test_bad_header_is_rejected_when_asked_not_when_iterated(offset, fmt, value):
    batch = with_header_field(build_batch(compressible_records(3)), offset, fmt, value)
    with pytest.raises(InvalidRecords):
        iter_records(batch)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_undecompressable_payload(codec):
    plain = build_batch(compressible_records(3))
    for junk in (b"", b"garbage" * 20, b"\x82SNAPPY\x00\x00", b"\x82SNAPPY\x00" + b"\0" * 8 + b"\x7f\xff\xff\xff"):
        with pytest.raises(InvalidRecords, match="decompress:|xerial"):  # corrupt, not "too large"
            decode_all(with_records_region(plain, codec, junk))


def test_snappy_length_claims_are_checked_before_allocating():
    plain = build_batch(compressible_records(3))
    claims_4_gib = b"\xff\xff\xff\xff\x0f" + b"\x00a"
    for region in (claims_4_gib, xerial(b"") + struct.pack(">i", 7) + claims_4_gib):
        with pytest.raises(InvalidRecords):
            decode_all(with_records_region(plain, 2, region))


@settings(max_examples=150)
@given(record_lists, st.sampled_from(CODECS))
def test_record_keys_are_the_keys_iter_records_reads(records, codec):
    batch = build_batch(records, codec)
    assert record_keys(batch) == {r.key for r in iter_records(batch) if r.key is not None}


def _keys_or_error(fn, *args):
    try:
        return fn(*args)
    except InvalidRecords:
        return InvalidRecords


@settings(max_examples=400)
@given(record_lists, st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=4))
def test_record_keys_inline_walk_agrees_with_the_exact_walk_on_damaged_records(records, damage):
    """The inline fast path may only ever answer what _walk_keys answers, for any bytes."""
    batch = bytearray(build_batch(records))
    if len(batch) == HEADER_SIZE:
        return
    for where, value in damage:
        batch[HEADER_SIZE + where % (len(batch) - HEADER_SIZE)] = value
    count = struct.unpack_from(">i", batch, HEADER_SIZE - 4)[0]
    assert _keys_or_error(record_keys, bytes(batch)) == _keys_or_error(_walk_keys, bytes(batch), HEADER_SIZE, len(batch), count)


def test_record_keys_refuses_what_iter_records_refuses():
    good = build_batch(compressible_records(5))
    for cut in (HEADER_SIZE + 3, len(good) - 2):
        torn = bytearray(good[:cut])
        struct.pack_into(">i", torn, 8, len(torn) - 12)  # batchLength of what is left
        with pytest.raises(InvalidRecords):
            record_keys(bytes(torn))
