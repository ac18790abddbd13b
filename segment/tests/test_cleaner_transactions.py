"""Both layouts' cleaners and transactions (segment/compaction/txn_cleaning.py, fed by the log's
aborted-transaction index), as Kafka's cleaner: an aborted transaction's records supersede
nothing and are dropped, and nothing at or past the last stable offset is cleaned, so an open
transaction's record cannot push out the value its key had before it (the open transaction may
still abort). In the segment layout the round stops inside a segment at that offset. The log:

    0      plain      k = committed
    1      plain      j = committed
    2      txn P      k = aborted
    3      ABORT P
    4      txn Q      j = open       the last stable offset while Q is open
    5..    plain      filler keys, enough to close the segments
"""

from __future__ import annotations

import pytest

from segment.compaction.txn_cleaning import CleanedTransactions
from segment.kafka import log_cleaner as segment_cleaner
from segment.kafka.store import SegmentLogStore
from segment.rocket import log_cleaner as commitlog_cleaner
from segment.rocket.store import RocketLogStore
from segment.tests.cleaner_checks import read_all, table
from segment.tests.log_configs import log_config
from segment.txn_index import AbortedTxn
from wire.batch_builder import build_batch
from wire.control_batch import build_control_batch

NOW = 10_000_000
CFG = log_config(segment_bytes=600, index_interval_bytes=128, cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)
P, Q = 7, 8


def _layouts():
    return [
        ("segment", lambda path: SegmentLogStore(path), segment_cleaner),
        ("commitlog", lambda path: RocketLogStore(path, commitlog_file_size=2048, queue_entries_per_file=4,
                                                  index_slots=8, index_entries=64, file_delete_delay_ms=0),
         commitlog_cleaner),
    ]


def _append(store, plog, batch) -> int:
    info = plog.append(bytearray(batch), 0, NOW - 5000)
    if hasattr(store, "commit_writes"):
        store.commit_writes()
    return info.first_offset


def _filler(store, plog, start: int, count: int) -> None:
    for i in range(start, start + count):
        _append(store, plog, build_batch([(f"f{i}".encode(), b"x" * 60)], NOW - 5000))


@pytest.mark.parametrize("name, open_store, cleaner", _layouts(), ids=[n for n, *_ in _layouts()])
def test_aborted_and_open_transactions_never_replace_a_committed_value(tmp_path, name, open_store, cleaner):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, CFG)
    _append(store, plog, build_batch([(b"k", b"committed")], NOW - 5000))
    _append(store, plog, build_batch([(b"j", b"committed")], NOW - 5000))
    assert _append(store, plog, build_batch([(b"k", b"aborted")], NOW - 5000, (P, 0, 0), True)) == 2
    plog.append_aborted_txn(AbortedTxn(P, 2, _append(store, plog, build_control_batch(P, 0, 0, False, NOW - 5000)), 4))
    assert _append(store, plog, build_batch([(b"j", b"open")], NOW - 5000, (Q, 0, 0), True)) == 4
    _filler(store, plog, 0, 40)

    assert cleaner.due(plog, 0, NOW, last_stable_offset=4)
    stats = cleaner.clean(plog, 0, NOW, 1 << 20, last_stable_offset=4)
    assert stats.end_offset == 4  # the open transaction holds the round
    records, _ = read_all(plog)
    assert (2, b"k", b"aborted") not in records  # dropped with its transaction
    assert {(o, k, v) for o, k, v in records if k in (b"k", b"j")} == {
        (0, b"k", b"committed"), (1, b"j", b"committed"), (4, b"j", b"open")}
    assert not cleaner.due(plog, stats.end_offset, NOW, last_stable_offset=4)  # nothing more until it ends

    end = _append(store, plog, build_control_batch(Q, 0, 0, False, NOW - 5000))
    plog.append_aborted_txn(AbortedTxn(Q, 4, end, end + 1))
    _filler(store, plog, 40, 40)
    stats = cleaner.clean(plog, stats.end_offset, NOW, 1 << 20, last_stable_offset=plog.log_end_offset)
    assert stats.end_offset > end
    records, headers = read_all(plog)
    assert table(records)[b"k"] == b"committed" and table(records)[b"j"] == b"committed"
    assert (4, b"j", b"open") not in records
    # the markers stay: delete.retention.ms has not passed for them
    assert [(h.producer_id, h.is_control) for h in headers if h.producer_id in (P, Q)] == [(P, True), (Q, True)]
    store.close()


def test_a_batch_is_aborted_only_inside_its_producers_aborted_range():
    """A round's walk in offset order: a transactional batch is aborted from its producer's
    aborted transaction's first offset up to that transaction's marker, and not otherwise."""
    txns = CleanedTransactions([AbortedTxn(P, 10, 20, 21), AbortedTxn(P, 40, 45, 46), AbortedTxn(Q, 0, 5, 6)])
    walk = [(0, Q, True, True), (3, Q, False, False), (4, Q, True, True), (5, Q, "abort", None),
            (10, P, True, True), (12, 9, True, False), (19, P, True, True), (20, P, "abort", None),
            (30, P, True, False), (35, P, "commit", None), (44, P, True, True), (45, P, "abort", None)]
    for offset, producer, kind, aborted in walk:
        if kind in ("abort", "commit"):
            batch = build_control_batch(producer, 0, 0, kind == "commit", NOW)
        else:
            batch = build_batch([(b"k", b"v")], NOW, (producer, 0, 0), kind)
        batch[0:8] = offset.to_bytes(8, "big")
        skipped = txns.skip_in_map(batch)
        assert skipped is (True if aborted is None else aborted), (offset, producer, kind)  # markers: no keys
