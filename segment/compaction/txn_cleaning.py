"""What compaction does with transactions: Kafka's CleanedTransactionMetadata, free of any layout.

A round walks the batches it rewrites in offset order, knowing the aborted transactions that
overlap them (the log's aborted-transaction index, segment/txn_index.py):

- A batch of an aborted transaction goes whole: read_committed consumers never count its
  records, and the offset map leaves it out (`skip_in_map`), so no aborted record supersedes
  an older value of its key.
- A marker goes once delete.retention.ms has passed for it, as a tombstone does, and only if
  no batch of its transaction was met in this round: batches met are removed in this round
  (aborted) or still hold records (committed), and batches without their marker would reopen
  the transaction when producer state is rebuilt from the log. So a marker outlives the last
  batch of its transaction by at least one round. An emptied marker (records already gone)
  goes like any emptied batch.
- An ABORT marker kept because batches of its transaction were met keeps its index entry; one
  kept only because delete.retention.ms has not passed loses it, its records being gone — as
  Kafka's cleaner rebuilds a cleaned segment's `.txnindex`.

A round's offset map never reaches the last stable offset (the caller caps it): a transaction
still open there may yet abort, and its records must not supersede anything before it does.
The segment layout rewrites the segment that holds that offset whole; the open transaction's
batches in it are no aborted one's, and every record past the round's end stays
(cleaning_policy.record_survives), an expired tombstone too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from segment.txn_index import AbortedTxn
from wire.control_batch import ABORT, control_type, is_marker
from wire.record_batch import BatchHeader, parse_header
from wire.records import Record

from .batch_filter import FilterResult, Outcome, filter_batch


class CleanedTransactions:
    def __init__(self, aborted: list[AbortedTxn]) -> None:
        """`aborted`: those overlapping the batches the walk will meet, from the log's index."""
        self._pending = deque(sorted(aborted, key=lambda t: t.first_offset))
        self._aborted: dict[int, tuple[AbortedTxn, bool]] = {}  # producer -> (its aborted txn, batch met)
        self._committed: set[int] = set()  # producers whose open (not aborted) transaction had a batch met

    def _started_by(self, offset: int) -> None:
        while self._pending and self._pending[0].first_offset <= offset:
            txn = self._pending.popleft()
            self._aborted.setdefault(txn.producer_id, (txn, False))

    def batch_aborted(self, header: BatchHeader) -> bool:
        """A batch that is not a marker: whether it belongs to an aborted transaction."""
        self._started_by(header.last_offset)
        if not header.is_transactional or header.is_control:
            return False
        ongoing = self._aborted.get(header.producer_id)
        if ongoing is not None:
            self._aborted[header.producer_id] = (ongoing[0], True)
            return True
        self._committed.add(header.producer_id)
        return False

    def marker(self, header: BatchHeader, kind: int) -> tuple[bool, AbortedTxn | None]:
        """(whether the marker may go once its retention has passed, the entry it keeps)."""
        self._started_by(header.last_offset)
        if kind == ABORT:
            txn, met = self._aborted.pop(header.producer_id, (None, False))
            return (False, txn) if met else (True, None)
        met = header.producer_id in self._committed
        self._committed.discard(header.producer_id)
        return not met, None

    def skip_in_map(self, batch) -> bool:
        """For the offset map's walk: markers (no keys; each ends its transaction here) and
        batches of aborted transactions are left out."""
        header = parse_header(batch)
        if is_marker(header):
            if header.record_count:
                self.marker(header, control_type(batch))
            return True
        return self.batch_aborted(header)


def clean_batch(batch, txns: CleanedTransactions, keep: Callable[[Record], bool], *, expired: bool,
                retain_empty: bool) -> tuple[FilterResult, AbortedTxn | None]:
    """One batch of a round: (what filter_batch makes of it, the index entry of a kept ABORT
    marker). `keep`: the record rule for ordinary batches; `expired`: delete.retention.ms has
    passed for the batch; `retain_empty`: it is its producer's last batch."""
    header = parse_header(batch)
    if is_marker(header) and header.record_count:
        may_go, entry = txns.marker(header, control_type(batch))
        stays = not (may_go and expired)
        result = filter_batch(batch, lambda _record: stays, retain_empty=retain_empty)
        return result, entry if result.outcome is Outcome.KEPT else None
    if header.is_control:  # an emptied marker, or a control batch of another kind
        return filter_batch(batch, lambda _record: True, retain_empty=retain_empty), None
    if txns.batch_aborted(header):
        return filter_batch(batch, lambda _record: False, retain_empty=retain_empty), None
    return filter_batch(batch, keep, retain_empty=retain_empty), None
