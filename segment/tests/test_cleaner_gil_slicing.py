"""The log cleaners hand the GIL back within a slice (segment/compaction/gil_slicer.py).

While a round runs in a thread, this thread (standing in for the event loop) blocks for 1 ms
again and again and measures how late it gets going again: that delay is its wait for the
GIL. A cleaner computing without pauses makes it wait CPython's whole switch interval (5 ms)
almost every time; a sliced one about one slice (1 ms) at most."""

from __future__ import annotations

import statistics
import sys
import threading
import time

import pytest

from segment.compaction.gil_slicer import GilSlicer
from segment.kafka import log_cleaner as segment_cleaner
from segment.kafka.store import SegmentLogStore
from segment.rocket import log_cleaner as commitlog_cleaner
from segment.rocket.store import RocketLogStore
from segment.tests.compaction_batches import client_batch
from segment.tests.log_configs import log_config

NOW = 10_000_000
CFG = log_config(segment_bytes=256 * 1024, index_interval_bytes=4096, cleanup_policy="compact",
                 min_cleanable_dirty_ratio=0.0, delete_retention_ms=1000)
# Batches of 1,000 records, as a producer with a large batch.size sends small records: the
# commitlog cleaner reads each batch with a pread (which releases the GIL), so with small
# batches it would hand the GIL over between them anyway.
RECORDS, BATCHES = 1000, 40  # a round of ~0.3-1 s of CPU


def _fill(plog) -> None:
    batch = client_batch([(b"key-%04d" % i, b"v" * 40, []) for i in range(RECORDS)], base_ts=NOW - 5000)
    for _ in range(BATCHES):
        plog.append(bytearray(batch), 0, NOW - 5000)


def _segment_log(tmp_path):
    plog = SegmentLogStore(tmp_path).open_partition("t", 0, CFG)
    _fill(plog)
    return plog, segment_cleaner


def _commitlog_log(tmp_path):
    store = RocketLogStore(tmp_path, commitlog_file_size=4 << 20, queue_entries_per_file=1024, index_slots=1024,
                           index_entries=1 << 16, file_delete_delay_ms=0)
    plog = store.open_partition("t", 0, CFG)
    _fill(plog)
    store.commit_writes()
    return plog, commitlog_cleaner


def test_the_slicer_pauses_once_a_slice_is_spent():
    now = [0.0]
    sleeps: list[float] = []
    slicer = GilSlicer(0.001, 0.0001, clock=lambda: now[0], sleep=sleeps.append)
    for _ in range(9):
        now[0] += 0.0001
        slicer.tick()
    assert sleeps == []
    now[0] += 0.0001
    slicer.tick()
    assert sleeps == [0.0001]
    slicer.tick()  # the next slice starts at the pause
    assert sleeps == [0.0001] and slicer.pauses == 1


@pytest.mark.parametrize("make_log", [_segment_log, _commitlog_log], ids=["segment", "commitlog"])
def test_a_round_gives_the_gil_back_within_a_slice(tmp_path, make_log):
    assert sys.getswitchinterval() == pytest.approx(0.005)
    plog, cleaner = make_log(tmp_path)
    result = {}
    round_thread = threading.Thread(target=lambda: result.update(stats=cleaner.clean(plog, 0, NOW, 1 << 24)))
    waits = []
    round_thread.start()
    while round_thread.is_alive() and len(waits) < 300:
        started = time.perf_counter()
        time.sleep(0.001)
        waits.append(time.perf_counter() - started - 0.001)
    round_thread.join()
    assert result["stats"].records_dropped > 0  # a real round ran
    assert len(waits) >= 30, f"the round ended after {len(waits)} waits: too short to measure"
    # Unsliced: median ~5 ms (a whole switch interval). Sliced: ~0.1-1 ms, more on a loaded box.
    assert statistics.median(waits) < 0.0025, sorted(waits)[len(waits) // 2 :: max(1, len(waits) // 10)]
