"""The rocket engine through the PartitionLog interface: the segment engine's contract tests, and more."""

from __future__ import annotations

import shutil
from bisect import bisect_right
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_segment_engine import fill, make_batch, read_offsets

from segment.log import OffsetOutOfRange
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config
from wire.record_batch import parse_header

CFG = log_config()
FILE = 4096


def open_store(path, **kw) -> RocketLogStore:
    opts = dict(commitlog_file_size=FILE, queue_entries_per_file=8, index_slots=64, index_entries=200)
    opts.update(kw)
    return RocketLogStore(path, **opts)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=40))
def test_every_offset_reads_its_containing_batch(tmp_path_factory, sizes):
    store = open_store(tmp_path_factory.mktemp("d"))
    plog = store.open_partition("t", 0, CFG)
    other = store.open_partition("u", 1, CFG)
    for n in sizes:  # interleave another partition so batches are not adjacent in the commitlog
        plog.append(make_batch(n), 0, 1_000)
        other.append(make_batch(1), 0, 1_000)
    total = sum(sizes)
    assert plog.log_end_offset == total
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    for offset in range(total):
        got = read_offsets(plog, plog.read(offset, 1, total))
        b = bisect_right(starts, offset) - 1
        assert got == list(range(starts[b], starts[b] + sizes[b]))
    assert read_offsets(plog, plog.read(0, 1 << 30, total)) == list(range(total))
    assert plog.read(total, 1000, total) == []
    with pytest.raises(OffsetOutOfRange):
        plog.read(total + 1, 1000, total)
    store.close()


def test_upper_bound_and_max_bytes(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, CFG)
    fill(plog, [5, 5, 5])
    assert read_offsets(plog, plog.read(0, 1 << 20, 10)) == list(range(10))
    one = len(make_batch(5))
    assert read_offsets(plog, plog.read(0, one + 1, 15)) == list(range(5))
    assert read_offsets(plog, plog.read(0, 1, 15)) == list(range(5))
    regions = plog.read(0, 1 << 20, 15)
    assert len(regions) == 3 and all(r.size == one for r in regions)
    assert parse_header(plog.read_bytes(regions[1])).base_offset == 5
    store.close()


def test_files_roll_and_survive_clean_restart(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, CFG)
    fill(plog, [10] * 30)
    store.commit_writes()  # a queue file is made by the first write of its entries
    root = tmp_path / "commitlog-store"
    assert len(list((root / "commitlog").iterdir())) >= 3
    assert len(list((root / "consumequeue" / "t" / "0").glob("*.time"))) == 4  # 30 entries, 8 per file
    store.close()
    assert not (root / "abort").exists()
    store = open_store(tmp_path)
    assert not store.abnormal
    plog = store.open_partition("t", 0, CFG)
    assert plog.log_end_offset == 300
    assert read_offsets(plog, plog.read(0, 1 << 30, 300)) == list(range(300))
    fill(plog, [1])
    assert plog.log_end_offset == 301
    store.close()


def test_truncate_and_delete_records(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, CFG)
    fill(plog, [10] * 20)
    plog.truncate_to(105)
    assert plog.log_end_offset == 100
    plog.delete_records_before(55)
    assert plog.log_start_offset == 55
    assert read_offsets(plog, plog.read(55, 1 << 20, 100))[0] == 50
    with pytest.raises(OffsetOutOfRange):
        plog.delete_records_before(101)
    fill(plog, [1])
    assert plog.log_end_offset == 101
    store.close()
    plog = open_store(tmp_path).open_partition("t", 0, CFG)
    assert (plog.log_start_offset, plog.log_end_offset) == (55, 101)
    assert read_offsets(plog, plog.read(100, 1 << 20, 101)) == [100]


def test_truncation_is_not_undone_by_crash_recovery(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, CFG)
    fill(plog, [10] * 5)
    store.checkpoint()  # checkpoint before the truncation: recovery re-reads what follows
    plog.truncate_to(20)
    crashed = tmp_path / "crashed"
    shutil.copytree(tmp_path / "commitlog-store", crashed / "commitlog-store")
    store.close()
    again = open_store(crashed)
    assert again.abnormal
    assert again.open_partition("t", 0, CFG).log_end_offset == 20
    again.close()


def test_retention_by_bytes_and_time(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, replace(CFG, retention_bytes=4096))
    other = store.open_partition("u", 0, CFG)
    fill(plog, [10] * 40)
    before = plog.size_in_bytes
    one = len(make_batch(10))
    deleted = plog.enforce_retention(10_000)
    assert deleted > 0 and plog.size_in_bytes == before - deleted
    assert 4096 <= plog.size_in_bytes < 4096 + one
    assert plog.log_start_offset == 400 - 10 * (plog.size_in_bytes // one)
    with pytest.raises(OffsetOutOfRange):
        plog.read(0, 100, plog.log_end_offset)
    files = sorted((tmp_path / "commitlog-store" / "commitlog").iterdir())
    assert files[0].name != "0" * 20  # the first commitlog files went: no queue needed them
    plog.update_config(replace(CFG, retention_ms=1000))
    plog.enforce_retention(10**12)
    assert plog.log_start_offset == plog.log_end_offset == 400 and plog.size_in_bytes == 0
    fill(plog, [3])
    assert read_offsets(plog, plog.read(400, 1 << 20, 403)) == [400, 401, 402]
    assert other.log_start_offset == 0
    store.close()
    plog = open_store(tmp_path).open_partition("t", 0, CFG)
    assert plog.log_start_offset == 400


def test_a_lagging_partition_keeps_commitlog_files(tmp_path):
    store = open_store(tmp_path)
    slow = store.open_partition("slow", 0, CFG)
    fast = store.open_partition("fast", 0, replace(CFG, retention_bytes=2000))
    fill(slow, [1])
    fill(fast, [10] * 40)
    fast.enforce_retention(10_000)
    cl = tmp_path / "commitlog-store" / "commitlog"
    assert (cl / ("0" * 20)).exists()  # slow's only batch is in file 0
    slow.delete_records_before(1)
    slow.enforce_retention(10_000)
    assert not (cl / ("0" * 20)).exists()
    assert read_offsets(fast, fast.read(fast.log_start_offset, 1 << 20, 400))[-1] == 399
    store.close()


def test_timestamp_lookup_exact_record(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, CFG)
    fill(plog, [10] * 30, ts=5_000)
    for target in (0, 5_000, 5_001, 5_123, 5_299):
        assert plog.offset_for_timestamp(target) == (max(target - 5_000, 0), max(target, 5_000))
    assert plog.offset_for_timestamp(5_300) is None
    assert plog.max_timestamp() == (299, 5_299)
    plog.delete_records_before(105)
    assert plog.offset_for_timestamp(5_000) == (105, 5_105)
    store.close()


def test_log_append_time(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, replace(CFG, message_timestamp_type="LogAppendTime"))
    info = plog.append(make_batch(3, ts=1), 0, 77_000)
    assert info.log_append_time == 77_000
    assert plog.max_timestamp() == (0, 77_000)
    assert plog.offset_for_timestamp(50_000) == (0, 77_000)
    store.close()


def test_partitions_are_listed_and_deleted(tmp_path):
    store = open_store(tmp_path)
    fill(store.open_partition("my-topic.x", 3, CFG), [2])
    fill(store.open_partition("a", 0, CFG), [2])
    assert store.existing_partitions() == [("a", 0), ("my-topic.x", 3)]
    store.delete_partition("a", 0)
    assert store.existing_partitions() == [("my-topic.x", 3)]
    crashed = tmp_path / "crashed"
    shutil.copytree(tmp_path / "commitlog-store", crashed / "commitlog-store")
    store.close()
    again = open_store(crashed)  # recovery does not bring the deleted partition back
    assert again.existing_partitions() == [("my-topic.x", 3)]
    plog = again.open_partition("a", 0, CFG)
    assert plog.log_end_offset == 0
    again.close()


def test_batch_headers_for_producer_state(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, CFG)
    fill(plog, [2, 3, 4])
    assert [(h.base_offset, h.last_offset) for h in plog.batch_headers(0)] == [(0, 1), (2, 4), (5, 8)]
    assert [h.base_offset for h in plog.batch_headers(3)] == [2, 5]
    store.close()
