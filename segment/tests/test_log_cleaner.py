"""The segment layout's log cleaner: an oracle over random logs, producer state, and a crash
at every file operation of a round."""

from __future__ import annotations

import os
import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_compaction_core import client_batch

from segment.kafka import log_cleaner
from segment.kafka.store import SegmentLogStore
from segment.tests.log_configs import log_config
from wire.record_batch import iter_batches
from wire.records import iter_records

NOW = 10_000_000
CFG = log_config(segment_bytes=600, index_interval_bytes=128, cleanup_policy="compact",
                 min_cleanable_dirty_ratio=0.0, delete_retention_ms=1000)


def write_log(store, batches, config=CFG):
    plog = store.open_partition("t", 0, config)
    for recs, producer in batches:
        plog.append(bytearray(client_batch([(k, v, []) for k, v in recs], producer=producer, base_ts=NOW - 5000)),
                    0, NOW - 5000)
    return plog


def read_all(plog):
    """(offset, key, value) of every record, and the headers of every batch, read as a fetch reads."""
    out, headers, offset = [], [], plog.log_start_offset
    while offset < plog.log_end_offset:
        regions = plog.read(offset, 1 << 20, plog.log_end_offset)
        assert regions, f"nothing read at {offset}"
        data = b"".join(plog.read_bytes(r) for r in regions)
        for pos, header in iter_batches(data):
            headers.append(header)
            out += [(r.offset, r.key, r.value) for r in iter_records(data[pos : pos + header.size])]
            offset = header.last_offset + 1
    return out, headers


def table(records):
    """The log read as a table: latest value per key, a tombstone removes its key."""
    view = {}
    for _offset, key, value in records:
        if value is None:
            view.pop(key, None)
        else:
            view[key] = value
    return view


def check_index_matches_log(plog):
    for seg in plog.segments:
        entries = (list(seg.index.keys), list(seg.index.values), list(seg.time_index.keys))
        size, next_offset = seg.size, seg.next_offset
        seg.recover()  # rebuilds both indexes from the log
        assert (list(seg.index.keys), list(seg.index.values), list(seg.time_index.keys)) == entries
        assert (seg.size, seg.next_offset) == (size, next_offset)


keys = st.sampled_from([b"a", b"b", b"c", b"d", b"e"])
batches = st.lists(st.tuples(st.lists(st.tuples(keys, st.one_of(st.none(), st.binary(min_size=1, max_size=30))),
                                      min_size=1, max_size=6),
                             st.sampled_from([(-1, -1, -1), (5, 0, 0)])),
                   min_size=1, max_size=30)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(batches=batches, expired=st.booleans())
def test_cleaned_log_reads_as_the_same_table(tmp_path_factory, batches, expired):
    batches = _fix_sequences(batches)
    store = SegmentLogStore(tmp_path_factory.mktemp("clean"))
    plog = write_log(store, batches)
    before, before_headers = read_all(plog)
    active_base = plog.segments[-1].base_offset
    now = NOW + (10_000 if expired else 0)  # tombstones written at NOW - 5000; delete.retention.ms 1000
    assert log_cleaner.due(plog, 0, now) == (len(plog.segments) > 1)
    log_cleaner.clean(plog, 0, now, memory_bytes=1 << 20)
    after, after_headers = read_all(plog)
    _check_cleaned(before, after, active_base, expired)
    _check_producer_state(before_headers, after_headers)
    check_index_matches_log(plog)
    store.close()
    reopened = SegmentLogStore(store.dir).open_partition("t", 0, CFG)
    assert read_all(reopened)[0] == after


def _fix_sequences(batches):
    """Idempotent batches carry increasing sequences, as a producer sends them."""
    out, seq = [], 0
    for recs, producer in batches:
        if producer[0] >= 0:
            producer = (producer[0], producer[1], seq)
            seq += len(recs)
        out.append((recs, producer))
    return out


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


def _check_producer_state(before_headers, after_headers):
    def last(headers):
        state = {}
        for h in headers:
            if h.has_producer_id:
                state[h.producer_id] = (h.producer_epoch, h.last_sequence, h.last_offset)
        return state
    assert last(after_headers) == last(before_headers)


class Crash(Exception):
    pass


def _crash_after(monkeypatch, n):
    """Make the n-th rename/unlink/rmtree from now on raise, as a kill -9 at that point would stop."""
    calls = [0]

    def wrap(real):
        def op(*args, **kwargs):
            if calls[0] == n:
                raise Crash()
            calls[0] += 1
            return real(*args, **kwargs)
        return op

    monkeypatch.setattr(os, "rename", wrap(os.rename))
    monkeypatch.setattr(os, "unlink", wrap(os.unlink))
    monkeypatch.setattr(shutil, "rmtree", wrap(shutil.rmtree))


CRASH_BATCHES = [([(b"a", b"1"), (b"b", b"1")], (-1, -1, -1)), ([(b"a", b"2"), (b"c", b"x" * 200)], (-1, -1, -1)),
                 ([(b"b", None), (b"c", b"3")], (-1, -1, -1)), ([(b"a", b"4")] * 3, (-1, -1, -1))] * 4


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
            _crash_after(m, n)
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
