"""The segment store's bound on open files: held, idle files closed first, nothing lost by closing,
and a region read for a fetch stays readable however the files around it are closed or deleted."""

from __future__ import annotations

import errno
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segment import open_files as open_files_module
from segment.open_files import OpenFiles, SegmentFile
from segment.kafka.store import SegmentLogStore
from segment.log import FileRegion, LogOffline
from segment.tests.segment_batches import fill, make_batch, read_offsets
from segment.tests.log_configs import log_config
from segment.tests.open_descriptors import fds_under


@settings(max_examples=30)
@given(capacity=st.integers(1, 6), uses=st.lists(st.integers(0, 11), min_size=1, max_size=60))
def test_capacity_holds_and_every_file_reads_back_what_was_written(tmp_path_factory, capacity, uses):
    directory = tmp_path_factory.mktemp("files")
    files = OpenFiles(capacity)
    segment_files = [SegmentFile(directory / f"{i}.log", files) for i in range(12)]
    written: dict[int, bytes] = {}
    for step, i in enumerate(uses):
        data = b"%d:%d;" % (i, step)
        segment_files[i].write(data, len(written.get(i, b"")))
        written[i] = written.get(i, b"") + data
        assert len(files) <= capacity
        assert len(fds_under(directory)) <= capacity
    for i, data in written.items():  # reopened as needed: the same bytes
        assert segment_files[i].pread(len(data) + 10, 0) == data
        assert len(fds_under(directory)) <= capacity


def test_least_recently_used_closes_first_and_sealed_before_active(tmp_path):
    files = OpenFiles(3)
    a, b, c, d = (SegmentFile(tmp_path / name, files) for name in "abcd")
    for f in (a, b, c):
        f.write(b"x", 0)
    a.pread(1, 0)  # a is now the most recent: b is the idle one
    d.write(b"x", 0)
    assert files.handle_if_open(b) is None
    assert all(files.handle_if_open(f) is not None for f in (a, c, d))
    files.set_sealed(d, True)  # d is the newest, but sealed files go before active ones
    b.pread(1, 0)
    assert files.handle_if_open(d) is None
    assert all(files.handle_if_open(f) is not None for f in (a, b, c))
    assert files.evictions == 2


def test_closing_a_file_with_unsynced_writes_leaves_the_fsync_to_its_next_sync(tmp_path, monkeypatch):
    """Eviction runs on the event loop in the middle of a request: it only closes. The file's
    next sync opens a descriptor for the fsync (a closed file is not a synced one)."""
    files = OpenFiles(1)
    a, b = SegmentFile(tmp_path / "a", files), SegmentFile(tmp_path / "b", files)
    a.write(b"acknowledged", 0)
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(open_files_module.os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")),
                                                                   real_fsync(fd)))
    b.pread(1, 0)  # closes a
    assert synced == [] and a.dirty and fds_under(tmp_path) == [str(tmp_path / "b")]
    a.sync()  # its descriptor took b's place in the bound: b is closed now
    assert synced == [str(tmp_path / "a")] and not a.dirty
    assert files.handle_if_open(a) is None and fds_under(tmp_path) == []
    a.sync()  # nothing left to sync
    assert len(synced) == 1 and a.pread(100, 0) == b"acknowledged"


@pytest.mark.parametrize("closed", [True, False])
def test_a_sync_holds_a_place_in_the_bound(tmp_path, monkeypatch, closed):
    """A closed file's fsync opens a descriptor, and an open one's may be evicted during its
    fsync while the descriptor stays open: either counts, or a checkpoint goes past the bound."""
    files = OpenFiles(2)
    a, b, c = (SegmentFile(tmp_path / name, files) for name in "abc")
    a.write(b"x", 0)
    b.write(b"x", 0)
    c.write(b"x", 0)  # closes a, unsynced
    b.pread(1, 0)  # c is the least recently used
    syncing = a if closed else c
    open_during_fsync = []
    real_fsync = os.fsync

    def fsync(fd):
        if not closed:
            a.pread(1, 0)  # the loop opens a file meanwhile: it evicts the file being synced
        open_during_fsync.append(len(fds_under(tmp_path)))
        real_fsync(fd)

    monkeypatch.setattr(open_files_module.os, "fsync", fsync)
    syncing.sync()
    assert open_during_fsync == [2] and not syncing.dirty


def test_a_deleted_file_needs_no_sync(tmp_path):
    files = OpenFiles(1)
    a, b = SegmentFile(tmp_path / "a", files), SegmentFile(tmp_path / "b", files)
    a.write(b"x", 0)
    b.write(b"x", 0)  # closes a, unsynced
    a.delete()
    a.sync()
    b.sync()
    assert not b.dirty


def test_a_failed_fsync_of_a_closed_file_takes_the_log_offline(tmp_path, monkeypatch):
    """EIO from the fsync of a file the bound closed with unsynced writes: the partition's
    flush fails, the log goes offline, and the file is never trusted again."""
    store = SegmentLogStore(tmp_path, max_open_files=1)
    hot = store.open_partition("t", 0, log_config())
    fill(hot, [3])
    other = store.open_partition("t", 1, log_config())  # its `.log` closes t-0's (one batch: no index file)
    fill(other, [1])
    assert all(store.open_files.handle_if_open(seg.log) is None for seg in hot.segments)
    real_fsync = os.fsync

    def eio_on_t0(fd):  # the disk under t-0's files fails (os is one module: filter by path)
        if "/t-0/" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_fsync(fd)

    monkeypatch.setattr(open_files_module.os, "fsync", eio_on_t0)
    with pytest.raises(LogOffline):
        hot.flush()
    monkeypatch.undo()
    assert hot.offline is not None
    with pytest.raises(LogOffline):
        hot.append(make_batch(1), 0, 1_000)
    with pytest.raises(OSError):
        hot.segments[0].log.sync()  # a later fsync, which would succeed, does not clear it
    other.flush()


def test_a_region_read_for_a_fetch_survives_eviction_and_deletion(tmp_path):
    store = SegmentLogStore(tmp_path, max_open_files=3)
    config = log_config(segment_bytes=100_000, retention_bytes=0)
    plog = store.open_partition("t", 0, config)
    for ts in range(3):  # three segments of one 80 KB batch each: sent with sendfile
        plog.append(make_batch(40, ts, value_size=2000), 0, ts)
    regions = [plog.read(o, 1, plog.log_end_offset)[0] for o in (0, 40, 80)]
    assert all(isinstance(r, FileRegion) for r in regions)
    expected = [plog.read_bytes(r) for r in regions]
    log_paths = [os.readlink(f"/proc/self/fd/{r.fd}") for r in regions]
    for p in range(1, 8):  # other partitions' files push every file of t-0 out of the set
        fill(store.open_partition("t", p, config), [1])
    assert all(store.open_files.handle_if_open(seg.log) is None for seg in plog.segments)
    plog.enforce_retention(10**13)  # and its old segments are deleted
    assert not os.path.exists(log_paths[0])
    assert [os.readlink(f"/proc/self/fd/{r.fd}") for r in regions] == [p + " (deleted)" * (not os.path.exists(p))
                                                                        for p in log_paths]
    assert [os.pread(r.fd, r.size, r.position) for r in regions] == expected
    before = len(fds_under(tmp_path))
    del regions
    assert len(fds_under(tmp_path)) < before  # the last holder gone: the descriptors close
    assert len(fds_under(tmp_path)) <= 3
    store.close()


def test_ten_times_more_files_than_the_bound_all_read_back(tmp_path):
    store = SegmentLogStore(tmp_path, max_open_files=12)
    logs = [store.open_partition("t", p, log_config(segment_bytes=2048)) for p in range(40)]
    for round_ in range(3):
        for p, plog in enumerate(logs):
            plog.append(make_batch(1 + p % 3, ts=round_), 0, round_)
            assert len(fds_under(tmp_path)) <= 12
    store.close()
    store = SegmentLogStore(tmp_path, max_open_files=12)
    for p in range(40):
        plog = store.open_partition("t", p, log_config(segment_bytes=2048))
        assert plog.log_end_offset == 3 * (1 + p % 3)
        data = b"".join(plog.read_bytes(r) for r in plog.read(0, 1 << 20, plog.log_end_offset))
        assert len(data) and len(fds_under(tmp_path)) <= 12
    assert store.clean
    store.close()


def test_small_reads_come_as_bytes_and_hold_no_descriptor(tmp_path):
    """A Fetch over many partitions of small batches must not pin a descriptor per partition
    (librdkafka's consumer of a 2,000-partition topic did, at a 1,024 limit)."""
    store = SegmentLogStore(tmp_path, max_open_files=6)
    logs = [store.open_partition("t", p, log_config()) for p in range(30)]
    for plog in logs:
        fill(plog, [2])
    answer = [plog.read(0, 1 << 20, plog.log_end_offset) for plog in logs]
    assert all(isinstance(r, bytes) for regions in answer for r in regions)
    assert len(fds_under(tmp_path)) <= 6
    assert [len(read_offsets(plog, regions)) for plog, regions in zip(logs, answer)] == [2] * 30
    store.close()
