"""Both layouts' cleaners and transactions (cleaning_policy.Transactions), as Kafka's cleaner:
an aborted transaction's records supersede nothing and are dropped, and nothing at or past the
last stable offset is cleaned, so an open transaction's record cannot push out the value its
key had before it (the open transaction may still abort). The log:

    0      plain      k = committed
    1      plain      j = committed
    2      txn P      k = aborted
    3      ABORT P
    4      txn Q      j = open       the last stable offset while Q is open
    5..    plain      filler keys, enough to close the segments
"""

from __future__ import annotations

import pytest
from test_log_cleaner import read_all, table

from segment.compaction.cleaning_policy import Transactions
from segment.kafka import log_cleaner as segment_cleaner
from segment.kafka.store import SegmentLogStore
from segment.rocket import log_cleaner as commitlog_cleaner
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config
from wire.batch_builder import build_batch
from wire.control_batch import build_control_batch
from wire.record_batch import parse_header

NOW = 10_000_000
CFG = log_config(segment_bytes=600, index_interval_bytes=128, cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)
P, Q = 7, 8


class _Aborted:
    def __init__(self, producer_id: int, first_offset: int, last_offset: int) -> None:
        self.producer_id, self.first_offset, self.last_offset = producer_id, first_offset, last_offset


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
    _append(store, plog, build_control_batch(P, 0, 0, False, NOW - 5000))
    assert _append(store, plog, build_batch([(b"j", b"open")], NOW - 5000, (Q, 0, 0), True)) == 4
    _filler(store, plog, 0, 40)

    held = Transactions.of(4, [_Aborted(P, 2, 3)])
    assert cleaner.due(plog, 0, NOW, held.stable_end)
    stats = cleaner.clean(plog, 0, NOW, 1 << 20, txns=held)
    assert stats.end_offset == 4  # the open transaction holds the round
    records, _ = read_all(plog)
    assert (2, b"k", b"aborted") not in records  # dropped with its transaction
    assert {(o, k, v) for o, k, v in records if k in (b"k", b"j")} == {
        (0, b"k", b"committed"), (1, b"j", b"committed"), (4, b"j", b"open")}
    assert not cleaner.due(plog, stats.end_offset, NOW, held.stable_end)  # nothing more until it ends

    end = _append(store, plog, build_control_batch(Q, 0, 0, False, NOW - 5000))
    _filler(store, plog, 40, 40)
    both = Transactions.of(plog.log_end_offset, [_Aborted(P, 2, 3), _Aborted(Q, 4, end)])
    stats = cleaner.clean(plog, stats.end_offset, NOW, 1 << 20, txns=both)
    assert stats.end_offset > end
    records, headers = read_all(plog)
    assert table(records)[b"k"] == b"committed" and table(records)[b"j"] == b"committed"
    assert (4, b"j", b"open") not in records
    # the markers stay (each its producer's last batch, which keeps the producer's state)
    assert [(h.producer_id, h.is_control) for h in headers if h.producer_id in (P, Q)] == [(P, True), (Q, True)]
    store.close()


def test_a_batch_is_aborted_only_inside_its_producers_aborted_range():
    txns = Transactions.of(100, [_Aborted(P, 10, 20), _Aborted(P, 40, 45), _Aborted(Q, 0, 5)])
    for offset, producer, transactional, aborted in [
            (10, P, True, True), (19, P, True, True), (20, P, True, False), (30, P, True, False),
            (44, P, True, True), (10, Q, True, False), (3, Q, True, True), (3, Q, False, False), (12, 9, True, False)]:
        batch = build_batch([(b"k", b"v")], NOW, (producer, 0, 0), transactional)
        batch[0:8] = offset.to_bytes(8, "big")
        assert txns.is_aborted(parse_header(batch)) is aborted, (offset, producer, transactional)
    assert Transactions().bound(50) == 50 and txns.bound(500) == 100 and txns.bound(50) == 50
