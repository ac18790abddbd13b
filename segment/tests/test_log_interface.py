"""The reading, lookup and removal side of PartitionLog and LogStore, run over both engines.

Each test runs on a segment-engine store and on a commitlog-engine store with small files
(log_engines.py), so segments roll and commitlog files turn over under it. What only one
layout has (its files, its recovery, its retention granularity) is tested beside that
engine (test_segment_engine.py, test_rocket_engine.py).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from log_engines import CFG, ENGINES, Engine
from segment.tests.segment_batches import fill, make_batch, read_offsets

from segment.log import OffsetOutOfRange


@pytest.fixture(params=ENGINES)
def engine(request, tmp_path):
    e = Engine(request.param, tmp_path)
    yield e
    e.store.close()


@pytest.mark.parametrize("kind", ENGINES)
@settings(max_examples=25)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=40))
def test_every_offset_reads_its_containing_batch(tmp_path_factory, kind, sizes):
    engine = Engine(kind, tmp_path_factory.mktemp(kind))
    try:
        plog = engine.log()
        for n in sizes:  # another partition between batches: in the commitlog they are not adjacent
            plog.append(make_batch(n), 0, 1_000)
            engine.noise()
        total = sum(sizes)
        assert plog.log_end_offset == total
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        for offset in range(total):
            got = read_offsets(plog, plog.read(offset, 1, total))
            b = bisect_right(starts, offset) - 1
            assert got == list(range(starts[b], starts[b] + sizes[b]))  # exactly the containing batch
        assert read_offsets(plog, plog.read(0, 1 << 30, total)) == list(range(total))
        assert plog.read(total, 1000, total) == []
        with pytest.raises(OffsetOutOfRange):
            plog.read(total + 1, 1000, total)
    finally:
        engine.store.close()


def test_upper_bound_and_max_bytes(engine):
    plog = engine.log()
    fill(plog, [5, 5, 5])
    assert read_offsets(plog, plog.read(0, 1 << 20, 10)) == list(range(10))
    one = len(make_batch(5))
    assert read_offsets(plog, plog.read(0, one + 1, 15)) == list(range(5))
    assert read_offsets(plog, plog.read(0, 1, 15)) == list(range(5))  # at least one whole batch
    assert read_offsets(plog, plog.read(5, 1 << 20, 15)) == list(range(5, 15))


def test_timestamp_lookup_finds_the_exact_record(engine):
    plog = engine.log()
    fill(plog, [10] * 30, ts=5_000)  # record i has timestamp 5000 + i
    for target in (0, 5_000, 5_001, 5_123, 5_299):
        assert plog.offset_for_timestamp(target) == (max(target - 5_000, 0), max(target, 5_000))
    assert plog.offset_for_timestamp(5_300) is None
    assert plog.max_timestamp() == (299, 5_299)
    plog.delete_records_before(105)  # the lookup answers from the log start on
    assert plog.offset_for_timestamp(5_000) == (105, 5_105)


def test_log_append_time_stamps_the_batch(engine):
    plog = engine.log(replace(CFG, message_timestamp_type="LogAppendTime"))
    info = plog.append(make_batch(3, ts=1), 0, 77_000)
    assert info.log_append_time == 77_000
    assert plog.max_timestamp() == (0, 77_000)
    assert plog.offset_for_timestamp(50_000) == (0, 77_000)


def test_batch_headers_for_producer_state(engine):
    plog = engine.log()
    fill(plog, [2, 3, 4])
    assert [(h.base_offset, h.last_offset) for h in plog.batch_headers(0)] == [(0, 1), (2, 4), (5, 8)]
    assert [h.base_offset for h in plog.batch_headers(3)] == [2, 5]


def test_truncate_and_delete_records_survive_a_clean_restart(engine):
    plog = engine.log()
    fill(plog, [10] * 20)
    plog.truncate_to(105)  # batch boundaries: truncation keeps whole batches below the offset
    assert plog.log_end_offset == 100
    plog.delete_records_before(55)
    assert plog.log_start_offset == 55
    assert read_offsets(plog, plog.read(55, 1 << 20, 100))[0] == 50  # the whole batch holding 55
    with pytest.raises(OffsetOutOfRange):
        plog.delete_records_before(101)
    fill(plog, [1])
    assert plog.log_end_offset == 101
    plog = engine.reopen(clean=True)
    assert (plog.log_start_offset, plog.log_end_offset) == (55, 101)
    assert read_offsets(plog, plog.read(100, 1 << 20, 101)) == [100]


def test_partitions_are_listed_and_a_deleted_one_stays_deleted_after_a_crash(engine):
    fill(engine.store.open_partition("my-topic.x", 3, CFG), [2])
    fill(engine.store.open_partition("a", 0, CFG), [2])
    engine.request_done()
    assert ("a", 0) in engine.store.existing_partitions()
    engine.store.delete_partition("a", 0)
    assert engine.store.existing_partitions() == [("my-topic.x", 3)]
    engine.reopen(clean=False)  # which opens the engine's own partition, t-0
    assert engine.store.existing_partitions() == [("my-topic.x", 3), ("t", 0)]
    assert engine.store.open_partition("a", 0, CFG).log_end_offset == 0
