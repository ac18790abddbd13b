"""flush.ms's schedule (broker/storage/periodic_flush.py): which partitions are due when."""

from __future__ import annotations

from broker.storage.periodic_flush import MAX_WAIT_MS, MIN_WAIT_MS, FlushSchedule

A, B = ("a", 0), ("b", 0)


def test_a_partition_is_due_flush_ms_after_it_was_first_seen_then_after_each_flush():
    s = FlushSchedule()
    assert s.due([(A, 100)], 0) == ([], 100)
    assert s.due([(A, 100)], 99) == ([], MIN_WAIT_MS)
    assert s.due([(A, 100)], 100)[0] == [A]
    s.flushed([A], 100)
    assert s.due([(A, 100)], 150) == ([], 50)
    assert s.due([(A, 100)], 200)[0] == [A]


def test_never_is_never_due_and_waits_the_longest():
    s = FlushSchedule()
    assert s.due([(A, -1)], 0) == ([], MAX_WAIT_MS)
    assert s.due([(A, -1)], 10**12) == ([], MAX_WAIT_MS)


def test_each_partition_has_its_own_clock_and_the_next_due_sets_the_wait():
    s = FlushSchedule()
    s.due([(A, 300), (B, 50)], 0)
    assert s.due([(A, 300), (B, 50)], 50) == ([B], 50)  # B again, after the flush it gets now
    s.flushed([B], 50)
    assert s.due([(A, 300), (B, 50)], 60) == ([], 40)


def test_flush_ms_zero_flushes_at_the_minimum_wait_rather_than_spinning():
    s = FlushSchedule()
    assert s.due([(A, 0)], 0) == ([A], MIN_WAIT_MS)


def test_a_partition_no_longer_hosted_is_forgotten_and_starts_afresh():
    s = FlushSchedule()
    s.due([(A, 100)], 0)
    s.due([], 50)
    assert s.due([(A, 100)], 120) == ([], 100)
    s.flushed([B], 120)  # never seen: nothing to record
    assert s.due([(B, 100)], 150) == ([], 100)
