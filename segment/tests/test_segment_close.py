"""A clean stop of the segment store: every log fsynced, several at once, and a failed fsync still
keeps the clean-shutdown marker away (segment/kafka/store.py, close)."""

from __future__ import annotations

import errno
import os
import threading

from segment import open_files as open_files_module
from segment.kafka.store import CLEAN_SHUTDOWN, SegmentLogStore
from segment.tests.log_configs import log_config
from segment.tests.segment_batches import fill

PARTITIONS = 24


def _dirty_store(tmp_path) -> SegmentLogStore:
    store = SegmentLogStore(tmp_path, max_open_files=PARTITIONS)  # fewer than the files: some close dirty
    for i in range(PARTITIONS):
        fill(store.open_partition("t", i, log_config()), [2])
    return store


def _files(store):
    """Each partition's `.log`: a batch this small makes no index entry, so no index file."""
    return [seg.log for plog in store.logs.values() for seg in plog.segments]


def test_close_fsyncs_logs_concurrently(tmp_path, monkeypatch):
    """Two fsyncs meet at a barrier: one after another they never would (the barrier breaks
    after its timeout and the close fails). 10,000 partitions took 32 s to stop one fsync at a
    time, 7-8.5 s so."""
    store = _dirty_store(tmp_path)
    files = _files(store)
    met = threading.Barrier(2, timeout=10)
    real_fsync = os.fsync
    calls = [0]
    lock = threading.Lock()

    def meeting_fsync(fd):
        with lock:
            calls[0] += 1
            first_two = calls[0] <= 2
        if first_two:
            met.wait()  # raises BrokenBarrierError if no second fsync comes while this one waits
        real_fsync(fd)

    monkeypatch.setattr(open_files_module.os, "fsync", meeting_fsync)
    store.close()
    monkeypatch.undo()
    assert not met.broken
    assert calls[0] >= len(files)
    assert not any(f.dirty for f in files)
    assert (tmp_path / CLEAN_SHUTDOWN).exists()


def test_a_failed_fsync_at_close_leaves_no_clean_shutdown_marker(tmp_path, monkeypatch):
    """EIO on one partition's files: that log goes offline, the others are still fsynced, and
    the next start recovers (no marker)."""
    store = _dirty_store(tmp_path)
    real_fsync = os.fsync

    def eio_on_t5(fd):
        if "/t-5/" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_fsync(fd)

    monkeypatch.setattr(open_files_module.os, "fsync", eio_on_t5)
    store.close()
    monkeypatch.undo()
    assert store.logs[("t", 5)].offline is not None
    assert not any(f.dirty for key, plog in store.logs.items() if key != ("t", 5)
                   for seg in plog.segments for f in (seg.log, seg.index.file, seg.time_index.file))
    assert not (tmp_path / CLEAN_SHUTDOWN).exists()
