"""The rocket engine through the PartitionLog interface: its commitlog files, crash recovery and
per-batch retention (what both engines share is tested over both in test_log_interface.py and
test_log_contract.py)."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest
from segment.tests.segment_batches import fill, make_batch, read_offsets

from segment.log import OffsetOutOfRange
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config

CFG = log_config()
FILE = 4096


def open_store(path, **kw) -> RocketLogStore:
    opts = dict(commitlog_file_size=FILE, queue_entries_per_file=8, index_slots=64, index_entries=200)
    opts.update(kw)
    return RocketLogStore(path, **opts)


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
    store.reclaim()  # the broker's, once per retention round
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
    store.reclaim()
    cl = tmp_path / "commitlog-store" / "commitlog"
    assert (cl / ("0" * 20)).exists()  # slow's only batch is in file 0
    slow.update_config(replace(CFG, retention_ms=1000))
    assert slow.enforce_retention(10**12) > 0  # its one batch expired
    # A partition's retention frees no shared file itself: collecting walks every queue, so
    # doing it per partition made a round over N partitions cost N^2; the round reclaims once.
    assert (cl / ("0" * 20)).exists()
    store.reclaim()
    assert not (cl / ("0" * 20)).exists()
    assert read_offsets(fast, fast.read(fast.log_start_offset, 1 << 20, 400))[-1] == 399
    store.close()
