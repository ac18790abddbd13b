"""segment.jitter.ms (LogConfig.random_segment_jitter): each segment rolls up to that much
before segment.ms, drawn per segment, never past segment.ms itself."""

from __future__ import annotations

import random

from segment.tests.log_configs import log_config


def test_no_jitter_by_default():
    assert {log_config().random_segment_jitter() for _ in range(50)} == {0}


def test_the_jitter_is_drawn_below_the_smaller_of_the_jitter_and_segment_ms():
    drawn = {log_config(segment_ms=100_000, segment_jitter_ms=1000).random_segment_jitter() for _ in range(500)}
    assert drawn <= set(range(1000)) and len(drawn) > 50  # drawn, not fixed
    capped = {log_config(segment_ms=10, segment_jitter_ms=1000).random_segment_jitter() for _ in range(200)}
    assert capped <= set(range(10))


def _segment_bases(tmp_path, jitter_ms: int) -> list[int]:
    """Append one record per 10 ms for 5 s to a log with segment.ms=1000; the base offsets
    (= the ms / 10 each segment started at) of its segments."""
    from segment.kafka.store import SegmentLogStore
    from segment.tests.segment_batches import make_batch

    store = SegmentLogStore(tmp_path)
    plog = store.open_partition("t", 0, log_config(segment_ms=1000, segment_jitter_ms=jitter_ms))
    t0 = 1_700_000_000_000
    for ms in range(0, 5000, 10):
        plog.append(make_batch(1, ts=t0 + ms), 0, t0 + ms)
    bases = sorted(int(p.stem) for p in (tmp_path / "t-0").glob("*.log"))
    store.close()
    return bases


def test_without_jitter_segments_roll_every_segment_ms(tmp_path):
    assert _segment_bases(tmp_path, 0) == [0, 100, 200, 300, 400]


def test_with_jitter_segments_roll_early_by_a_different_amount_each(tmp_path):
    random.seed(7)  # the draws; any seed gives the same shape
    bases = _segment_bases(tmp_path, 1000)
    spans = [b - a for a, b in zip(bases, bases[1:])]
    assert len(bases) > 5 and all(0 < s <= 100 for s in spans) and len(set(spans)) > 1, bases
