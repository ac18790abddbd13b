"""The Kafka-style engine against oracles: its segment files, recovery and retention (what both
engines share is tested over both in test_log_interface.py and test_log_contract.py)."""

from __future__ import annotations

import os
import random
from bisect import bisect_right
from dataclasses import replace

import pytest

from segment.kafka.index_file import OffsetIndex
from segment.open_files import OpenFiles
from segment.kafka.store import SegmentLogStore
from segment.log import OffsetOutOfRange
from segment.tests.segment_batches import SMALL, fill, read_offsets
from wire.record_batch import iter_batches

def test_index_floor_matches_bisect(tmp_path):
    keys = sorted(random.Random(3).sample(range(10_000), 300))
    index = OffsetIndex(tmp_path / "x.index", 0, OpenFiles(4))
    for k in keys:
        index.append(k, k * 2)
    probe = list(range(-5, 10_005, 7))
    random.Random(4).shuffle(probe)
    for target in probe:
        i = bisect_right(keys, target) - 1
        assert index.lookup(target) == ((keys[i], keys[i] * 2) if i >= 0 else (0, 0))
    index.close()
    reopened = OffsetIndex(tmp_path / "x.index", 0, OpenFiles(4))
    assert list(reopened.keys) == keys


def test_segments_roll_and_survive_clean_restart(tmp_path):
    store = SegmentLogStore(tmp_path)
    plog = store.open_partition("t", 0, SMALL)
    fill(plog, [10] * 30)
    names = sorted(p.name for p in (tmp_path / "t-0").glob("*.log"))
    assert len(names) > 3 and names[0] == "00000000000000000000.log"
    store.close()
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    store = SegmentLogStore(tmp_path)
    plog = store.open_partition("t", 0, SMALL)
    assert plog.log_end_offset == 300
    assert read_offsets(plog, plog.read(0, 1 << 30, 300)) == list(range(300))
    fill(plog, [1])
    assert plog.log_end_offset == 301
    store.close()


def _log_bytes(tmp_path, sizes):
    store = SegmentLogStore(tmp_path)
    plog = store.open_partition("t", 0, replace(SMALL, segment_bytes=1 << 20))
    fill(plog, sizes)
    store.close()
    path = tmp_path / "t-0" / "00000000000000000000.log"
    return path, path.read_bytes()


def test_recovery_from_every_truncation_point(tmp_path):
    path, data = _log_bytes(tmp_path, [3, 1, 4, 1, 5])
    boundaries = [pos + h.size for pos, h in iter_batches(data)]
    for cut in range(len(data) + 1):
        path.write_bytes(data[:cut])
        (tmp_path / ".kafka_cleanshutdown").unlink(missing_ok=True)
        for ext in (".index", ".timeindex"):
            path.with_suffix(ext).unlink(missing_ok=True)
        (tmp_path / "recovery-point-offset-checkpoint").unlink(missing_ok=True)
        store = SegmentLogStore(tmp_path)
        plog = store.open_partition("t", 0, SMALL)
        whole = [b for b in boundaries if b <= cut]
        expected_end = sum([3, 1, 4, 1, 5][: len(whole)])
        assert plog.log_end_offset == expected_end, cut
        assert os.path.getsize(path) == (whole[-1] if whole else 0)
        assert read_offsets(plog, plog.read(0, 1 << 20, expected_end)) == list(range(expected_end))
        store.close()


def test_garbage_and_flipped_bytes_are_cut(tmp_path):
    path, data = _log_bytes(tmp_path, [2, 2, 2])
    batches = [pos for pos, _ in iter_batches(data)]
    corrupted = bytearray(data)
    corrupted[batches[2] + 70] ^= 0xFF  # inside the third batch's records: CRC fails
    path.write_bytes(bytes(corrupted) + b"\x00" * 100)
    (tmp_path / ".kafka_cleanshutdown").unlink()
    (tmp_path / "recovery-point-offset-checkpoint").unlink()
    plog = SegmentLogStore(tmp_path).open_partition("t", 0, SMALL)
    assert plog.log_end_offset == 4
    assert os.path.getsize(path) == batches[2]


def test_retention_by_bytes_and_time(tmp_path):
    store = SegmentLogStore(tmp_path)
    plog = store.open_partition("t", 0, replace(SMALL, retention_bytes=4096))
    fill(plog, [10] * 40)
    before = plog.size_in_bytes
    deleted = plog.enforce_retention(10_000)
    assert deleted > 0 and plog.size_in_bytes == before - deleted <= 4096 + 2048
    assert plog.log_start_offset == plog.segments[0].base_offset > 0
    with pytest.raises(OffsetOutOfRange):
        plog.read(0, 100, plog.log_end_offset)
    plog.update_config(replace(SMALL, retention_ms=1000))
    plog.enforce_retention(10**12)  # everything is old: all segments go, the log stays usable
    assert plog.log_start_offset == plog.log_end_offset == 400
    fill(plog, [3])
    assert read_offsets(plog, plog.read(400, 1 << 20, 403)) == [400, 401, 402]
    store.close()
    plog = SegmentLogStore(tmp_path).open_partition("t", 0, SMALL)
    assert plog.log_start_offset == 400
