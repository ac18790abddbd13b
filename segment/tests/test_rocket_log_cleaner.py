"""The commitlog layout's log cleaner: an oracle over random logs (with another partition
interleaved in the same commitlog), key lookups after cleaning, and a crash at every file
operation of a round's swap."""

from __future__ import annotations

import os
import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segment.rocket import log_cleaner
from segment.rocket.key_lookup import lookup_key
from segment.rocket.store import RocketLogStore
from segment.tests.cleaner_checks import (
    CRASH_BATCHES, Crash, batches, check_producer_state, crash_after, fix_sequences, read_all, table,
)
from segment.tests.commitlog_cleaner_logs import CFG, NOW, write_log
from segment.tests.compaction_batches import client_batch


def open_store(path):
    return RocketLogStore(path, commitlog_file_size=2048, queue_entries_per_file=4, index_slots=8, index_entries=64,
                          file_delete_delay_ms=0)


def active_base(plog):
    """Where the last stretch of segment.bytes of queue batches starts (never cleaned)."""
    snap = log_cleaner.snapshot(plog)
    entries, _closed, uncleanable, _ = log_cleaner._plan(plog, snap, 0, NOW, None, None)
    return uncleanable


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(batches=batches, expired=st.booleans(), rounds=st.integers(1, 2))
def test_cleaned_log_reads_as_the_same_table(tmp_path_factory, batches, expired, rounds):
    batches = fix_sequences(batches)
    store = open_store(tmp_path_factory.mktemp("clean"))
    plog = write_log(store, batches)
    other_before = read_all(store.logs[("u", 0)])[0]
    before, before_headers = read_all(plog)
    end_before = plog.log_end_offset
    active = active_base(plog)
    now = NOW + (10_000 if expired else 0)  # tombstones written at NOW - 5000; delete.retention.ms 1000
    for _ in range(rounds):  # a second round cleans the generation the first one wrote
        due = log_cleaner.due(plog, 0, now)
        stats = log_cleaner.clean(plog, 0, now, memory_bytes=1 << 20)
        assert due == (stats.end_offset is not None) or not due
    after, after_headers = read_all(plog)
    _check_cleaned(before, after, active, expired)
    check_producer_state(before_headers, after_headers)
    assert plog.log_end_offset == end_before and plog.size_in_bytes == sum(h.size for h in after_headers)
    assert read_all(store.logs[("u", 0)])[0] == other_before  # the commitlog's other partition untouched
    _check_lookups(store, after)
    store.collect()
    assert read_all(plog)[0] == after  # what collection freed was not needed
    store.close()
    reopened = open_store(store.dir.parent)
    again = reopened.open_partition("t", 0, CFG)
    assert read_all(again)[0] == after
    _check_lookups(reopened, after)
    reopened.close()


def _check_cleaned(before, after, active, tombstones_expired):
    originals = {offset: (key, value) for offset, key, value in before}
    assert all(originals[o] == (k, v) for o, k, v in after)  # offsets and contents unchanged
    assert [o for o, *_ in after] == sorted(o for o, *_ in after)
    assert table(after) == table(before)
    assert [r for r in after if r[0] >= active] == [r for r in before if r[0] >= active]  # active range as it was
    latest = {key: offset for offset, key, _ in before}
    for offset, key, value in after:
        if offset < active:
            assert latest[key] == offset or latest[key] >= active  # superseded only by the active range
            if tombstones_expired and latest[key] == offset:
                assert value is not None


def _check_lookups(store, records):
    """Key lookup answers what the log holds: no record a clean dropped, the latest value last."""
    for key in {k for _, k, _ in records} | {b"a", b"z"}:
        hits = lookup_key(store, "t", key)
        assert [(h.offset, h.value) for h in hits] == [(o, v) for o, k, v in records if k == key]


def test_lookup_never_answers_a_dropped_record_still_in_the_commitlog(tmp_path):
    store = open_store(tmp_path)
    plog = write_log(store, [([(b"k", b"v%d" % i)], (-1, -1, -1)) for i in range(40)])
    assert [h.value for h in lookup_key(store, "t", b"k")][:2] == [b"v0", b"v1"]  # the history, before
    stats = log_cleaner.clean(plog, 0, NOW, 1 << 20)
    assert stats.end_offset is not None and stats.records_dropped > 0
    hits = lookup_key(store, "t", b"k")
    assert hits[-1].value == b"v39" and b"v0" not in [h.value for h in hits]
    assert [h.offset for h in hits] == [o for o, *_ in read_all(plog)[0]]
    # the clean's commitlog units are still there until collected: they are not answers
    assert store.commitlog.min_offset == 0


def test_commitlog_files_go_once_every_queue_is_past_them(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, CFG)
    for i in range(200):
        plog.append(bytearray(client_batch([(b"k%d" % (i % 3), b"x" * 50, [])], base_ts=NOW)), 0, NOW)
    files_before = len(store.commitlog.files)
    log_cleaner.clean(plog, 0, NOW, 1 << 20)
    store.checkpoint()
    store.collect()
    assert len(store.commitlog.files) < files_before / 2
    assert table(read_all(plog)[0]) == {b"k0": b"x" * 50, b"k1": b"x" * 50, b"k2": b"x" * 50}


def test_offset_for_timestamp_and_truncation_below_the_compacted_end(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, CFG)
    for i in range(60):
        plog.append(bytearray(client_batch([(b"k%d" % (i % 2), b"v%d" % i, [])], base_ts=NOW + i)), 0, NOW)
    log_cleaner.clean(plog, 0, NOW + 100, 1 << 20)
    end = plog.compacted.end
    offsets = [o for o, *_ in read_all(plog)[0]]
    assert offsets[0] < end and plog.offset_for_timestamp(NOW) == (offsets[0], NOW + offsets[0])
    assert plog.offset_for_timestamp(NOW + 59) == (59, NOW + 59)
    assert plog.max_timestamp() == (59, NOW + 59)
    plog.truncate_to(end - 1)  # into the compacted range: [46] stays of its batches [46, 47]
    assert plog.log_end_offset == plog.compacted.end == end - 1
    kept = read_all(plog)[0]
    assert [o for o, *_ in kept] == [end - 2]
    store.close()
    assert read_all(open_store(tmp_path).open_partition("t", 0, CFG))[0] == kept


def test_a_crash_at_any_file_operation_recovers_to_before_or_after(tmp_path, monkeypatch):
    reference = open_store(tmp_path / "reference")
    plog = write_log(reference, CRASH_BATCHES)
    before = read_all(plog)[0]
    log_cleaner.clean(plog, 0, NOW + 10_000, 1 << 20)
    after = read_all(plog)[0]
    assert len(after) < len(before)
    outcomes = set()
    for n in range(100):
        data = tmp_path / f"run{n}"
        store = open_store(data)
        plog = write_log(store, CRASH_BATCHES)
        store.checkpoint()
        with monkeypatch.context() as m:
            crash_after(m, n)
            try:
                log_cleaner.clean(plog, 0, NOW + 10_000, 1 << 20)
                finished = True
            except Crash:
                finished = False
            crashed = tmp_path / f"crash{n}"
            shutil.copytree(data, crashed)  # what the disk holds at the kill
        recovered = open_store(crashed)
        got = read_all(recovered.open_partition("t", 0, CFG))[0]
        assert got in (before, after), f"crash at operation {n}: neither the log before nor after the round"
        part = crashed / "commitlog-store" / "consumequeue" / "t" / "0"
        assert not list(part.glob("*.swap")) and not (part / log_cleaner.WORK_DIR).exists()
        _check_lookups(recovered, got)
        outcomes.add(got == after)
        recovered.close()
        if finished:
            break
    assert finished and outcomes == {False, True}  # both ends reached by some crash


def test_retention_or_truncation_during_a_round_rolls_it_back(tmp_path):
    store = open_store(tmp_path)
    plog = write_log(store, CRASH_BATCHES)
    before = read_all(plog)[0]

    def truncate_first(swap):
        plog.truncate_to(plog.log_end_offset - 1)
        return swap()

    stats = log_cleaner.clean(plog, 0, NOW, 1 << 20, truncate_first)
    assert stats.groups_swapped == 0 and plog.compacted is None
    assert read_all(plog)[0] == [r for r in before if r[0] < plog.log_end_offset]
    assert not list((store.dir / "consumequeue" / "t" / "0").glob("*.swap"))
    assert os.listdir(store.dir / "consumequeue" / "t" / "0")
