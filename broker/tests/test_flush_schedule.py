"""flush.ms's schedule (broker/storage/periodic_flush.py): which written partitions are due when."""

from __future__ import annotations

from broker.storage.periodic_flush import MAX_WAIT_MS, MIN_WAIT_MS, FlushSchedule

A, B = ("a", 0), ("b", 0)


def configs(**flush_ms):
    """flush_ms_of over named partitions, counting whom it was asked about."""
    asked = []

    def flush_ms_of(p):
        asked.append(p)
        return flush_ms.get(p[0])
    return flush_ms_of, asked


def test_a_partition_is_due_flush_ms_after_it_was_written_then_after_its_next_write():
    s = FlushSchedule()
    of, _ = configs(a=100)
    s.written([A], 0)
    assert s.due(of, 0) == ([], 100)
    assert s.due(of, 99) == ([], MIN_WAIT_MS)
    assert s.due(of, 100)[0] == [A]
    assert s.due(of, 1000) == ([], MAX_WAIT_MS)  # flushed and not written since: nothing to do
    s.written([A], 1000)
    assert s.due(of, 1100)[0] == [A]


def test_a_write_already_waiting_keeps_its_time():
    s = FlushSchedule()
    of, _ = configs(a=100)
    s.written([A], 0)
    s.written([A], 90)  # the first unflushed write sets when it is due
    assert s.due(of, 100)[0] == [A]


def test_only_written_partitions_are_looked_at():
    s = FlushSchedule()
    of, asked = configs(a=100, b=100)
    s.written([A], 0)
    s.due(of, 50)
    assert asked == [A]


def test_never_is_forgotten_and_waits_the_longest():
    s = FlushSchedule()
    of, asked = configs(a=-1)
    s.written([A], 0)
    assert s.due(of, 0) == ([], MAX_WAIT_MS)
    assert len(s) == 0
    s.due(of, 10**12)
    assert asked == [A]  # asked once, then not again until written again


def test_each_partition_has_its_own_clock_and_the_next_due_sets_the_wait():
    s = FlushSchedule()
    of, _ = configs(a=300, b=50)
    s.written([A, B], 0)
    assert s.due(of, 50) == ([B], 250)


def test_flush_ms_zero_is_due_at_once():
    s = FlushSchedule()
    of, _ = configs(a=0)
    s.written([A], 0)
    assert s.due(of, 0) == ([A], MAX_WAIT_MS)  # nothing left waiting (the task looks again per
    # the shortest flush.ms hosted, at least MIN_WAIT_MS later)


def test_a_partition_no_longer_hosted_is_forgotten():
    s = FlushSchedule()
    of, _ = configs()  # None for everyone: not hosted
    s.written([A], 0)
    assert s.due(of, 500) == ([], MAX_WAIT_MS)
    assert len(s) == 0


def test_a_flush_of_shared_files_covers_the_partitions_it_names():
    s = FlushSchedule()
    s.written([A, B], 0)
    s.flushed(lambda p: p == A)
    of, asked = configs(a=10, b=10)
    assert s.due(of, 20)[0] == [B]
    assert asked == [B]
