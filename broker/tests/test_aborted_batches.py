"""AbortedBatches (broker/groups/share/aborted_batches.py): which batches a read_committed share
group archives, by a read_committed consumer's rule, with interleaved producers."""

from __future__ import annotations

from broker.groups.share.aborted_batches import AbortedBatches
from segment.txn_index import AbortedTxn
from wire.record_batch import CONTROL_BIT, TRANSACTIONAL_BIT, BatchHeader

PLAIN, TXN, MARKER = 0, TRANSACTIONAL_BIT, TRANSACTIONAL_BIT | CONTROL_BIT


def batch(base: int, count: int, producer: int, attributes: int) -> BatchHeader:
    return BatchHeader(base, 0, 0, 2, 0, attributes, count - 1, 0, 0, producer, 0, 0, count)


def test_only_the_aborted_transactions_batches_are_aborted():
    # offsets: 0-1 p1 (aborted), 2-3 p2 (committed), 4-5 plain, 6 p1 abort marker, 7 p2 commit marker,
    # 8-9 p1 again (a later transaction, committed)
    walk = [batch(0, 2, 1, TXN), batch(2, 2, 2, TXN), batch(4, 2, -1, PLAIN), batch(6, 1, 1, MARKER),
            batch(7, 1, 2, MARKER), batch(8, 2, 1, TXN)]
    aborted = AbortedBatches([AbortedTxn(1, 0, 6, 0)])
    assert [aborted.is_aborted(b) for b in walk] == [True, False, False, False, False, False]


def test_a_read_starting_inside_an_aborted_transaction_still_sees_it():
    aborted = AbortedBatches([AbortedTxn(5, 10, 30, 10), AbortedTxn(6, 12, 31, 10)])
    walk = [batch(20, 2, 5, TXN), batch(22, 2, 6, TXN), batch(30, 1, 5, MARKER), batch(40, 1, 5, TXN)]
    assert [aborted.is_aborted(b) for b in walk] == [True, True, False, False]


def test_nothing_is_aborted_without_aborted_transactions():
    aborted = AbortedBatches([])
    assert not aborted.is_aborted(batch(0, 3, 1, TXN))
