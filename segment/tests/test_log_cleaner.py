"""The segment layout's log cleaner: an oracle over random logs, producer state, and a crash
at every file operation of a round."""

from __future__ import annotations

import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segment.kafka import log_cleaner
from segment.kafka.store import SegmentLogStore
from segment.tests.cleaner_checks import (
    CRASH_BATCHES, Crash, batches, check_producer_state, crash_after, fix_sequences, read_all, table,
)
from segment.tests.compaction_batches import client_batch
from segment.tests.log_configs import log_config

NOW = 10_000_000
CFG = log_config(segment_bytes=600, index_interval_bytes=128, cleanup_policy="compact",
                 min_cleanable_dirty_ratio=0.0, delete_retention_ms=1000)


def write_log(store, batches, config=CFG):
    plog = store.open_partition("t", 0, config)
    for recs, producer in batches:
        plog.append(bytearray(client_batch([(k, v, []) for k, v in recs], producer=producer, base_ts=NOW - 5000)),
                    0, NOW - 5000)
    return plog


def check_index_matches_log(plog):
    for seg in plog.segments:
        entries = (list(seg.index.keys), list(seg.index.values), list(seg.time_index.keys))
        size, next_offset = seg.size, seg.next_offset
        seg.recover()  # rebuilds both indexes from the log
        assert (list(seg.index.keys), list(seg.index.values), list(seg.time_index.keys)) == entries
        assert (seg.size, seg.next_offset) == (size, next_offset)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(batches=batches, expired=st.booleans())
def test_cleaned_log_reads_as_the_same_table(tmp_path_factory, batches, expired):
    batches = fix_sequences(batches)
    store = SegmentLogStore(tmp_path_factory.mktemp("clean"))
    plog = write_log(store, batches)
    before, before_headers = read_all(plog)
    active_base = plog.segments[-1].base_offset
    now = NOW + (10_000 if expired else 0)  # tombstones written at NOW - 5000; delete.retention.ms 1000
    assert log_cleaner.due(plog, 0, now) == (len(plog.segments) > 1)
    log_cleaner.clean(plog, 0, now, memory_bytes=1 << 20)
    after, after_headers = read_all(plog)
    _check_cleaned(before, after, active_base, expired)
    check_producer_state(before_headers, after_headers)
    check_index_matches_log(plog)
    store.close()
    reopened = SegmentLogStore(store.dir).open_partition("t", 0, CFG)
    assert read_all(reopened)[0] == after


def _check_cleaned(before, after, active_base, tombstones_expired):
    originals = {offset: (key, value) for offset, key, value in before}
    assert all(originals[o] == (k, v) for o, k, v in after)  # offsets and contents unchanged
    assert [o for o, *_ in after] == sorted(o for o, *_ in after)
    assert table(after) == table(before)
    assert [r for r in after if r[0] >= active_base] == [r for r in before if r[0] >= active_base]
    cleaned = [r for r in after if r[0] < active_base]
    latest = {}
    for offset, key, _ in before:
        latest[key] = offset
    for offset, key, value in cleaned:
        assert latest[key] == offset or latest[key] >= active_base and offset == max(
            o for o, k, _ in before if k == key and o < active_base)  # superseded only by the active segment
        if tombstones_expired:
            assert value is not None


def test_a_crash_at_any_file_operation_recovers_to_before_or_after(tmp_path, monkeypatch):
    reference = SegmentLogStore(tmp_path / "reference")
    plog = write_log(reference, CRASH_BATCHES)
    states = [read_all(plog)[0]]  # the log before the round, then after each group's swap

    def swap_and_record(swap):
        swapped = swap()
        states.append(read_all(plog)[0])
        return swapped

    log_cleaner.clean(plog, 0, NOW + 10_000, 1 << 20, swap_and_record)
    before, after = states[0], states[-1]
    assert len(after) < len(before) and len(states) > 2
    outcomes = set()
    for n in range(200):
        data = tmp_path / f"run{n}"
        store = SegmentLogStore(data)
        plog = write_log(store, CRASH_BATCHES)
        with monkeypatch.context() as m:
            crash_after(m, n)
            try:
                log_cleaner.clean(plog, 0, NOW + 10_000, 1 << 20)
                finished = True
            except Crash:
                finished = False
            crashed = tmp_path / f"crash{n}"
            shutil.copytree(data, crashed)  # what the disk holds at the kill
        recovered = SegmentLogStore(crashed).open_partition("t", 0, CFG)
        got = read_all(recovered)[0]
        assert got in states, f"crash at operation {n}: not the log before or after a group's swap"
        assert not list(crashed.glob("t-0/*.swap")) and not list(crashed.glob("t-0/*.cleaned"))
        check_index_matches_log(recovered)
        outcomes.add(states.index(got))
        if finished:
            break
    assert finished and outcomes == set(range(len(states)))  # every state reached by some crash
