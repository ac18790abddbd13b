"""A segment's offset and time indexes are read on first use, not at open (index_file.py): a log
reopened after a clean stop answers as the log that was never closed, and its open reads none of
the non-active segments' index entries."""

from __future__ import annotations

import struct

from segment.kafka.store import SegmentLogStore
from segment.tests.log_configs import log_config
from segment.tests.segment_batches import fill, read_offsets

MANY = log_config(segment_bytes=1024, index_interval_bytes=128, retention_ms=10_000)
BATCHES = [3, 1, 4, 1, 5, 9, 2, 6] * 12  # 376 records, timestamps 1,000 .. 1,375


def open_log(path):
    store = SegmentLogStore(path)
    return store, store.open_partition("t", 0, MANY)


def filled(path):
    store, plog = open_log(path)
    fill(plog, BATCHES)
    return store, plog


def answers(plog) -> dict:
    end = plog.log_end_offset
    return {
        "end": end,
        "start": plog.log_start_offset,
        "reads": [read_offsets(plog, plog.read(o, 1 << 20, end)) for o in range(plog.log_start_offset, end)],
        "short_reads": [read_offsets(plog, plog.read(o, 300, end)) for o in range(plog.log_start_offset, end, 7)],
        "by_time": [plog.offset_for_timestamp(ts) for ts in range(900, 1_450, 3)],
        "max_time": plog.max_timestamp(),
        "headers": [(h.base_offset, h.last_offset) for h in plog.batch_headers(0)],
    }


def test_reopened_log_answers_reads_timestamps_truncation_and_retention_as_before(tmp_path):
    kept_store, kept = filled(tmp_path / "kept")  # never closed: its indexes were built in memory
    store, plog = filled(tmp_path / "reopened")
    store.close()
    store, plog = open_log(tmp_path / "reopened")
    assert len(plog.segments) > 10
    assert answers(plog) == answers(kept)

    for log in (kept, plog):  # into a non-active segment, then appends after the cut
        log.truncate_to(150)
        fill(log, [2, 7, 1], ts=1_200)
    assert answers(plog) == answers(kept)

    kept_store.close()
    store.close()
    kept_store, kept = open_log(tmp_path / "kept")
    store, plog = open_log(tmp_path / "reopened")
    for log in (kept, plog):
        assert log.enforce_retention(now_ms=1_000 + 10_000 + 100) > 0  # the first 100 ms have expired
    assert plog.log_start_offset > 0
    assert answers(plog) == answers(kept)
    kept_store.close()
    store.close()


def test_open_reads_no_index_entries_of_non_active_segments(tmp_path):
    store, plog = filled(tmp_path)
    assert len(plog.segments) > 10
    # A garbage entry in the middle of a sealed segment's offset index (its key below the one
    # before it): the index drops it and every entry after it when it reads its entries, so the
    # file's size tells whether an open read them.
    sealed = plog.segments[2]
    assert len(sealed.index) >= 3
    path = sealed.index.path
    first = sealed.base_offset
    expected = read_offsets(plog, plog.read(first + 1, 1 << 20, plog.log_end_offset))
    store.close()
    raw = bytearray(path.read_bytes())
    assert struct.unpack_from(">I", raw, 0)[0] > 1  # entry 0 is a later batch's: none at position 0
    struct.pack_into(">I", raw, 8, 1)  # entry 1's relative offset, below entry 0's
    path.write_bytes(bytes(raw))

    store, plog = open_log(tmp_path)
    assert path.stat().st_size == len(raw)  # not read at open
    # The first segment's are read: the leader-epoch cache's check reads the batch where each
    # epoch starts (epoch_recovery.py), here epoch 0 at the log start.
    assert not any(seg.index.loaded or seg.time_index.loaded for seg in plog.segments[1:-1])
    assert read_offsets(plog, plog.read(first + 1, 1 << 20, plog.log_end_offset)) == expected
    assert plog.segments[2].index.loaded
    assert path.stat().st_size == 8  # read at first use, the garbage dropped
    store.close()


def test_clean_open_recovers_a_segment_whose_last_index_entry_names_no_batch(tmp_path):
    store, plog = filled(tmp_path)
    expected = answers(plog)
    sealed = plog.segments[1]
    path = sealed.index.path
    store.close()
    raw = bytearray(path.read_bytes())
    struct.pack_into(">I", raw, len(raw) - 4, 5)  # the last entry's position, inside a batch
    path.write_bytes(bytes(raw))

    store, plog = open_log(tmp_path)
    assert answers(plog) == expected
    assert path.read_bytes() != bytes(raw)  # rebuilt from the log
    store.close()
