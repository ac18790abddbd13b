"""Consume-queue arithmetic against plain lists: file boundaries, lookups, cuts, torn files."""

from __future__ import annotations

import os
import random
from bisect import bisect_right

from hypothesis import given, settings
from hypothesis import strategies as st

from segment.open_files import OpenFiles
from segment.rocket.consume_queue import ConsumeQueue
from segment.rocket.queue_file import ENTRY_SIZE

PER_FILE = 4


def build(path, sizes, timestamps=None, start=0):
    """Queue with one batch per size; returns it and the oracle list of (base, last, phys, max_ts)."""
    q = ConsumeQueue(path, "t", 0, PER_FILE, OpenFiles(4))
    oracle, base, phys = [], start, 1000
    for i, n in enumerate(sizes):
        ts = timestamps[i] if timestamps else 10 * i
        q.put(phys, 100 + i, base, base + n - 1, ts)
        oracle.append((base, base + n - 1, phys, ts))
        base += n
        phys += 100 + i + 7
    return q, oracle


def check(q, oracle):
    assert len(q) == len(oracle)
    assert q.end_offset == (oracle[-1][1] + 1 if oracle else q.empty_end)
    got = [(e.base_offset, e.last_offset, e.phys, e.max_timestamp) for e in q.entries_from(0)]
    assert got == oracle
    bases = [o[0] for o in oracle]
    for offset in range(-1, (oracle[-1][1] + 2) if oracle else 1):
        i = q.find(offset)
        if not oracle or offset > oracle[-1][1]:
            assert i is None
        else:
            k = max(bisect_right(bases, offset) - 1, 0)
            assert q.entry(i).base_offset == bases[k], offset


def test_file_boundaries_and_names(tmp_path):
    q, oracle = build(tmp_path, [1, 2, 3, 1, 1, 5, 2, 2, 9, 1])
    q.write_pending()  # as the store does after each request: new entries wait in memory till then
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.isdigit())
    assert names == ["%020d" % i for i in (0, 4, 8)]
    assert [os.path.getsize(tmp_path / n) for n in names] == [4 * ENTRY_SIZE, 4 * ENTRY_SIZE, 2 * ENTRY_SIZE]
    assert all((tmp_path / (n + ".time")).exists() for n in names)
    check(q, oracle)
    q.close()
    check(ConsumeQueue(tmp_path, "t", 0, PER_FILE, OpenFiles(4)), oracle)


@settings(max_examples=40)
@given(st.lists(st.integers(1, 5), min_size=0, max_size=30), st.data())
def test_lookup_and_truncation_match_oracle(tmp_path_factory, sizes, data):
    path = tmp_path_factory.mktemp("q")
    q, oracle = build(path, sizes)
    check(q, oracle)
    end = oracle[-1][1] + 1 if oracle else 0
    cut = data.draw(st.integers(0, end + 2))
    q.truncate_to_offset(cut)
    kept = [o for o in oracle if o[1] < cut]
    check(q, kept)
    if len(kept) < len(oracle):
        assert q.end_offset == oracle[len(kept)][0]  # LEO goes back to the first dropped batch
    q.put(99_999, 1, q.end_offset, q.end_offset + 2, 5)
    kept.append((q.end_offset - 3, q.end_offset - 1, 99_999, 5))
    q.close()
    check(ConsumeQueue(path, "t", 0, PER_FILE, OpenFiles(4)), kept)


def test_phys_and_time_searches(tmp_path):
    rng = random.Random(5)
    stamps = [rng.randint(0, 1000) for _ in range(23)]
    q, oracle = build(tmp_path, [2] * 23, stamps)
    for target in range(-1, 1003, 7):
        i = q.first_reaching(target)
        expected = next((k for k, ts in enumerate(stamps) if ts >= target), 23)
        assert i == expected
    for k, o in enumerate(oracle):
        assert q.first_phys_at_or_after(o[2]) == k
        assert q.first_phys_at_or_after(o[2] + 1) == k + 1
    q.close()


def test_torn_entries_and_lagging_time_file_are_cut(tmp_path):
    q, oracle = build(tmp_path, [1] * 7)
    q.close()
    last = tmp_path / ("%020d" % 4)
    with open(last, "ab") as f:
        f.write(b"\x01" * 7)  # torn entry
    time_file = last.with_name(last.name + ".time")
    os.truncate(time_file, 2 * ENTRY_SIZE)  # time side behind by one entry
    q = ConsumeQueue(tmp_path, "t", 0, PER_FILE, OpenFiles(4))
    check(q, oracle[:6])
    assert os.path.getsize(last) == 2 * ENTRY_SIZE
    q.close()


def test_short_middle_file_ends_the_queue(tmp_path):
    q, oracle = build(tmp_path, [1] * 10)
    q.close()
    os.truncate(tmp_path / ("%020d" % 4), 3 * ENTRY_SIZE)
    q = ConsumeQueue(tmp_path, "t", 0, PER_FILE, OpenFiles(4))
    check(q, oracle[:7])
    assert not (tmp_path / ("%020d" % 8)).exists()
    q.close()


def test_delete_files_below_and_empty_queue(tmp_path):
    q, oracle = build(tmp_path, [3] * 10)
    assert q.delete_files_below(5) == 4  # file 0 goes; file 4 still holds entry 5
    assert q.start_index == 4 and q.first_offset == 12
    assert [e.base_offset for e in q.entries_from(0)] == [o[0] for o in oracle[4:]]
    assert q.find(0) == 4  # below the first entry: the first batch after it
    assert q.delete_files_below(100) == 4  # the last file always stays
    q.truncate_entries(0)
    assert len(q) == 0 and q.end_offset == 24 and q.find(24) is None
    q.put(5, 5, 24, 24, 0)
    assert q.entry(8).base_offset == 24 and q.end_offset == 25
    q.close()


def test_a_position_past_the_last_entry_is_answered_without_reading_the_files(tmp_path, monkeypatch):
    """A start asks every queue where the checkpoint's commitlog position falls (recovery's
    drop); for all but the queues written since it, that is past the last entry. 20 queues
    here, as thousands at a start: no entry read, and the answers a bisection gives."""
    from segment.rocket.queue_file import QueueFile

    queues = [build(tmp_path / str(i), [1, 2, 3, 1, 2])[0] for i in range(20)]
    for q in queues:
        q.write_pending()
    past = {id(q): q.last.phys + 1 for q in queues}
    reads = []
    real = QueueFile.read
    monkeypatch.setattr(QueueFile, "read", lambda self, rel, n: reads.append(rel) or real(self, rel, n))
    assert [q.first_phys_at_or_after(past[id(q)]) for q in queues] == [q.next_index for q in queues]
    assert reads == []
    assert [q.first_phys_at_or_after(q.last.phys) for q in queues] == [q.next_index - 1 for q in queues]
