"""A segment's files are fsynced at once (segment/sync_together.py): the flush of a
flush.messages=1 acknowledgement waits for about the longest fsync, not their sum."""

from __future__ import annotations

import threading

import pytest

from segment.fsync_count import fsyncs
from segment.kafka.store import SegmentLogStore
from segment.open_files import OpenFiles, SegmentFile
from segment.sync_together import sync_together
from segment.tests.log_configs import log_config
from segment.tests.segment_batches import fill


class SyncsMeeting(OpenFiles):
    """Real OpenFiles whose fsyncs each wait, before they run, until `parties` of them are
    waiting at once: syncs made one after another never get there (BrokenBarrierError)."""

    def __init__(self, parties: int) -> None:
        super().__init__(100)
        self.meeting = threading.Barrier(parties, timeout=10)
        self.synced: list[str] = []

    def fsync(self, f: SegmentFile) -> None:
        self.meeting.wait()
        super().fsync(f)
        self.synced.append(f.path.suffix)


def a_log_with_index_entries(tmp_path, files: OpenFiles):
    store = SegmentLogStore(tmp_path, open_files=files)
    plog = store.prepare_partition("t", 0, log_config(index_interval_bytes=1))  # an index entry per batch
    fill(plog, [1, 1, 1])
    return plog


def test_a_segments_dirty_files_are_fsynced_at_the_same_time(tmp_path):
    files = SyncsMeeting(3)  # .log, .index, .timeindex were written; .txnindex was not
    plog = a_log_with_index_entries(tmp_path, files)
    seg = plog.segments[-1]
    before = fsyncs()
    plog.flush()
    assert sorted(files.synced) == [".index", ".log", ".timeindex"]
    after = fsyncs()
    assert {kind: after[kind] - before.get(kind, 0) for kind in ("log", "index", "timeindex")} == \
        {"log": 1, "index": 1, "timeindex": 1}
    assert not any(f.dirty for f in (seg.log, seg.index.file, seg.time_index.file, seg.txn_index.file))


def test_a_failed_fsync_is_raised_after_the_other_files_were_fsynced(tmp_path):
    seg = a_log_with_index_entries(tmp_path, OpenFiles(100)).segments[-1]
    seg.log.sync_error = OSError(5, "Input/output error")  # what a failed fsync leaves on the file
    with pytest.raises(OSError) as raised:
        sync_together([seg.log, seg.index.file, seg.time_index.file, seg.txn_index.file])
    assert raised.value is seg.log.sync_error
    assert not seg.index.file.dirty and not seg.time_index.file.dirty
