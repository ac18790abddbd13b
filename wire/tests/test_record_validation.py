"""The record framing check on produce (wire/record_validation.py) and its two walks: the
Python oracle (record_walk.py) and the compiled one (_record_walk.pyx), which must agree."""

from __future__ import annotations

import cramjam
import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wire import record_walk
from wire.batch_builder import _record, build_record_batch
from wire.record_batch import HEADER_SIZE, BatchTooLarge, InvalidBatch, InvalidRecord, parse_header, validate_produced
from wire import records as wire_records
from wire.record_validation import RECORD_WALK_COMPILED, check_records, stored_batch_keys

if RECORD_WALK_COMPILED:
    from wire._record_walk import walk_records as compiled_walk
WALKS = [record_walk.walk_records] + ([compiled_walk] if RECORD_WALK_COMPILED else [])

headers = st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=3)
records = st.lists(st.tuples(st.none() | st.binary(max_size=200), st.none() | st.binary(max_size=300),
                             st.integers(-(2**40), 2**40), headers), min_size=1, max_size=30)


def batch_of(recs, codec: int = 0) -> bytearray:
    batch = build_record_batch(0, len(recs) - 1, [(i, 1_000 + ts, k, v, tuple(h)) for i, (k, v, ts, h) in
                                                 enumerate(recs)])
    if codec:
        return with_payload(batch, {1: cramjam.gzip, 3: cramjam.lz4, 4: cramjam.zstd}[codec]
                            .compress(bytes(batch[HEADER_SIZE:])), codec)
    return batch


def with_payload(batch: bytearray, payload: bytes, codec: int | None = None, count: int | None = None) -> bytearray:
    """The batch's header over another records region, sizes and CRC made right again: the
    damage a CRC does not catch."""
    out = bytearray(batch[:HEADER_SIZE]) + payload
    out[8:12] = (len(out) - 12).to_bytes(4, "big")
    if codec is not None:
        out[22] = (out[22] & ~7) | codec
    if count is not None:
        out[57:61] = count.to_bytes(4, "big", signed=True)
    out[17:21] = crc32c.crc32c(memoryview(out)[21:]).to_bytes(4, "big")
    return out


def keys_of(recs):
    return {k for k, _v, _t, _h in recs if k is not None}


@settings(max_examples=200)
@given(records, st.sampled_from([0, 1, 3, 4]))
def test_batches_a_producer_builds_pass_with_their_keys(recs, codec):
    batch = batch_of(recs, codec)
    header = validate_produced(batch, 1 << 30)
    assert check_records(batch, header, want_keys=True).walked.keys == keys_of(recs)
    assert check_records(batch, header).walked.keys is None


def _damaged(recs, kind: str) -> bytearray:
    good = [_record(i, 0, k, v, tuple(h)) for i, (k, v, _t, h) in enumerate(recs)]
    batch = batch_of(recs)
    if kind == "count too high":
        return with_payload(batch, b"".join(good), count=len(recs) + 1)
    if kind == "trailing bytes":
        return with_payload(batch, b"".join(good) + b"\x00")
    if kind == "record missing":
        return with_payload(batch, b"".join(good[:-1]))
    if kind == "length too long":  # the first record claims one byte more than it has
        first = bytearray(good[0])
        return with_payload(batch, _with_length(first, len(first) - 1 + 1) + b"".join(good[1:]) + b"\x00")
    if kind == "length too short":
        first = bytearray(good[0])
        return with_payload(batch, _with_length(first, 5) + b"".join(good[1:]))
    if kind == "offset deltas out of order":
        swapped = [_record(len(recs) - 1 - i, 0, k, v, tuple(h)) for i, (k, v, _t, h) in enumerate(recs)]
        if len(recs) == 1:
            swapped = [_record(1, 0, recs[0][0], recs[0][1], tuple(recs[0][3]))]
        return with_payload(batch, b"".join(swapped))
    if kind == "key length below -1":
        return with_payload(batch, _record_raw(0, key_len=b"\x03") + b"".join(good[1:]))  # zigzag 3 = -2
    if kind == "key runs past its record":
        return with_payload(batch, _record_raw(0, key_len=b"\x40") + b"".join(good[1:]))  # 32 bytes claimed
    if kind == "negative header count":
        return with_payload(batch, _record_raw(0, header_count=b"\x01") + b"".join(good[1:]))
    if kind == "header key null":
        return with_payload(batch, _record_raw(0, header_count=b"\x02", tail=b"\x01\x01") + b"".join(good[1:]))
    if kind == "varint too long":
        return with_payload(batch, _record_raw(0, timestamp=b"\xff" * 10 + b"\x01") + b"".join(good[1:]))
    raise AssertionError(kind)


def _with_length(record: bytearray, new_length: int) -> bytes:
    # strip the old zigzag length varint, write another
    pos = 0
    while record[pos] & 0x80:
        pos += 1
    body = bytes(record[pos + 1 :])
    out = bytearray()
    v = (new_length << 1) ^ (new_length >> 63)
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out) + body


def _record_raw(offset_delta: int, key_len=b"\x01", header_count=b"\x00", timestamp=b"\x00", tail=b"") -> bytes:
    body = b"\x00" + timestamp + bytes([offset_delta << 1]) + key_len + b"\x02v" + header_count + tail
    return _with_length(bytearray(b"\x00") + body, len(body))


DAMAGE = ["count too high", "trailing bytes", "record missing", "length too long", "length too short",
          "offset deltas out of order", "key length below -1", "key runs past its record",
          "negative header count", "header key null", "varint too long"]


@settings(max_examples=40)
@given(records.filter(lambda r: len(r) >= 2), st.sampled_from(DAMAGE))
def test_each_kind_of_damage_is_refused_by_both_walks(recs, kind):
    batch = _damaged(recs, kind)
    header = parse_header(batch)
    for walk in WALKS:
        with pytest.raises(InvalidRecord):
            walk(batch, HEADER_SIZE, header.size, header.record_count, True)


def test_compressed_damage_and_bombs():
    recs = [(b"k", b"v" * 10, 0, [])] * 3
    good = batch_of(recs)
    header = parse_header(good)
    broken = with_payload(good, b"\x28\xb5\x2f\xfd garbage", codec=4)
    with pytest.raises(InvalidBatch) as caught:
        check_records(broken, parse_header(broken))
    assert not isinstance(caught.value, InvalidRecord)  # CORRUPT_MESSAGE, not INVALID_RECORD
    inner_broken = with_payload(good, cramjam.zstd.compress(bytes(good[HEADER_SIZE:]) + b"\x00"), codec=4)
    with pytest.raises(InvalidRecord):
        check_records(inner_broken, parse_header(inner_broken))
    bomb = with_payload(good, cramjam.zstd.compress(b"\x00" * (8 << 20)), codec=4)
    with pytest.raises(BatchTooLarge):  # MESSAGE_TOO_LARGE past the limit, before any walk
        check_records(bomb, parse_header(bomb), max_uncompressed_bytes=1 << 20)
    assert header.record_count == 3


def test_the_compiled_walk_is_built():
    """`make` builds it (setup.py's extension is optional only so a machine without a C
    compiler still installs): here, where gcc exists, a missing build is a broken build."""
    assert RECORD_WALK_COMPILED, "wire/_record_walk was not compiled: see pip's build output"


@settings(max_examples=400)
@given(records, st.data())
def test_compiled_walk_agrees_with_the_python_oracle_on_any_damage(recs, data):
    """Flip, insert or delete bytes anywhere in the records: both walks accept with the same
    keys, or both refuse."""
    region = bytearray(batch_of(recs)[HEADER_SIZE:])
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, max(0, len(region) - 1)))
        op = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        if op == "flip" and region:
            region[at] = data.draw(st.integers(0, 255))
        elif op == "insert":
            region[at:at] = bytes([data.draw(st.integers(0, 255))])
        elif region:
            del region[at]
    count = data.draw(st.sampled_from([len(recs), len(recs) + 1, max(0, len(recs) - 1), 2**31 - 1]))
    verdicts = []
    for walk in WALKS:
        try:
            verdicts.append(walk(bytes(region), 0, len(region), count, True))
        except InvalidRecord:
            verdicts.append("refused")
    assert verdicts[0] == verdicts[1]


@settings(max_examples=100)
@given(records, st.sampled_from([0, 1, 3]))
def test_a_stored_batchs_keys_are_record_keys(recs, codec):
    """The commitlog's key index of a follower's batch: the compiled walk gives what the
    lenient Python walk gives."""
    batch = batch_of(recs, codec)
    assert stored_batch_keys(batch) == wire_records.record_keys(batch) == keys_of(recs)


def test_a_compacted_batchs_keys_come_from_the_lenient_walk():
    """Offset deltas with gaps (the log cleaner keeps a record's own delta) fail the producer's
    framing check, yet are a stored batch: its keys are still indexed."""
    body = _record_raw(0, key_len=b"\x02k") + _record_raw(2, key_len=b"\x02j")
    batch = with_payload(batch_of([(b"x", b"v", 0, [])] * 3), body, count=2)
    assert stored_batch_keys(batch) == {b"k", b"j"}


@settings(max_examples=200)
@given(records)
def test_the_walk_gives_the_records_timestamp_range_and_keyless_count(recs):
    """What replica/record_checks.py decides a batch by: the smallest and largest timestampDelta
    (deltas may fall as well as rise) and how many records have no key, from both walks."""
    batch = batch_of(recs)
    header = parse_header(batch)
    deltas = [r.timestamp - header.base_timestamp for r in wire_records.iter_records(batch)]
    expected = (None, min(deltas), max(deltas), sum(k is None for k, _v, _t, _h in recs))
    for walk in WALKS:
        assert walk(batch, HEADER_SIZE, header.size, header.record_count, False) == expected
        assert walk(batch, HEADER_SIZE, HEADER_SIZE, 0, False) == (None, 0, 0, 0)
