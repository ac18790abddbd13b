"""A crash recovery of the segment layout re-derives every index from the log, and writes an
index file only where what it derives differs from what the file holds (log_segment.recover,
index_file.rederive_from): a partition whose files are whole costs no write, a torn tail still
cuts the log and its index entries (segment/kafka)."""

from __future__ import annotations

import os
from dataclasses import replace

from segment.kafka.store import SegmentLogStore
from segment.tests.segment_batches import SMALL, fill, read_offsets

CONFIG = replace(SMALL, segment_bytes=1 << 20)  # one segment, many index entries (256-byte interval)
SIZES = [5] * 40


def _crash(tmp_path) -> None:
    """What a kill -9 before any checkpoint leaves: no clean-shutdown marker, no recovery point
    (every segment is scanned from its start)."""
    (tmp_path / ".kafka_cleanshutdown").unlink(missing_ok=True)
    (tmp_path / "recovery-point-offset-checkpoint").unlink(missing_ok=True)


def _written(tmp_path, partitions: int) -> tuple[list[bytes], list[bytes]]:
    store = SegmentLogStore(tmp_path)
    for i in range(partitions):
        fill(store.open_partition("t", i, CONFIG), SIZES)
    store.close()
    stems = [tmp_path / f"t-{i}" / "00000000000000000000" for i in range(partitions)]
    return ([s.with_suffix(".index").read_bytes() for s in stems],
            [s.with_suffix(".timeindex").read_bytes() for s in stems])


def test_recovering_whole_files_writes_no_index(tmp_path):
    indexes, time_indexes = _written(tmp_path, 3)
    assert all(len(b) > 8 for b in indexes)  # several entries to re-derive
    _crash(tmp_path)
    store = SegmentLogStore(tmp_path)
    end = sum(SIZES)
    for i in range(3):
        plog = store.open_partition("t", i, CONFIG)
        seg = plog.segments[0]
        assert seg.scanned_from == 0  # recovered, not trusted
        assert (seg.index.file.writes, seg.time_index.file.writes, seg.log.writes) == (0, 0, 0)
        assert plog.log_end_offset == end
        assert read_offsets(plog, plog.read(0, 1 << 20, end)) == list(range(end))
        assert [plog.segments[0].index.lookup(o) for o in range(0, end, 7)]  # entries readable
    store.close()
    stems = [tmp_path / f"t-{i}" / "00000000000000000000" for i in range(3)]
    assert [s.with_suffix(".index").read_bytes() for s in stems] == indexes
    assert [s.with_suffix(".timeindex").read_bytes() for s in stems] == time_indexes


def test_a_torn_tail_cuts_the_log_and_the_index_entries_past_it(tmp_path):
    indexes, _ = _written(tmp_path, 1)
    log_path = tmp_path / "t-0" / "00000000000000000000.log"
    data = log_path.read_bytes()
    keep = len(data) // 2
    log_path.write_bytes(data[:keep] + b"\x00" * 50)  # half the batches, then a torn one
    _crash(tmp_path)
    store = SegmentLogStore(tmp_path)
    plog = store.open_partition("t", 0, CONFIG)
    end = plog.log_end_offset
    assert 0 < end < sum(SIZES)
    assert read_offsets(plog, plog.read(0, 1 << 20, end)) == list(range(end))
    seg = plog.segments[0]
    assert all(pos < os.path.getsize(log_path) for pos in seg.index.values)
    entries = len(seg.index)
    assert os.path.getsize(seg.index.file.path) == entries * 8
    assert seg.index.file.path.read_bytes() == indexes[0][:entries * 8]  # the entries kept are the old ones
    fill(plog, [3])  # appends go on past the cut
    assert plog.log_end_offset == end + 3
    store.close()
    reopened = SegmentLogStore(tmp_path).open_partition("t", 0, CONFIG)
    assert read_offsets(reopened, reopened.read(0, 1 << 20, end + 3)) == list(range(end + 3))
