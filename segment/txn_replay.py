"""Transactions as the batches of a log show them: which are open, and what an ABORT marker ends.

Kafka's rules (ProducerStateManager), shared by the partition's live state
(replica/transaction_state.py) and the engines' rebuild of their transaction index
(txn_index.py) after an unclean stop:

- a transactional batch (attributes bit 4, not a control batch) of a producer with no open
  transaction opens one at the batch's first offset;
- a marker (a control batch, wire/control_batch.py) ends the producer's transaction, COMMIT
  or ABORT; with nothing open it ends an empty one that began at the marker itself;
- an ABORT marker yields an AbortedTxn whose last stable offset is the first offset of the
  oldest other open transaction, else the marker's offset + 1 (Kafka's
  lastStableOffset(completedTxn), what the index's early stop relies on);
- an emptied marker (the cleaner keeps a producer's last batch as a bare header) still ends
  its producer's transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from wire.control_batch import ABORT, control_type, is_marker
from wire.record_batch import BatchHeader

from .txn_index import AbortedTxn


class OpenTransactions:
    def __init__(self) -> None:
        self._first: dict[int, int] = {}  # producer id -> first offset of its open transaction

    def begin(self, producer_id: int, first_offset: int) -> None:
        """A transactional batch: it opens the producer's transaction unless one is open."""
        self._first.setdefault(producer_id, first_offset)

    def end(self, producer_id: int, marker_offset: int, aborted: bool) -> tuple[int, AbortedTxn | None]:
        """A marker at `marker_offset`: (the ended transaction's first offset, its AbortedTxn
        when the marker is an ABORT)."""
        first = self._first.pop(producer_id, marker_offset)
        if not aborted:
            return first, None
        lso = min(self._first.values(), default=marker_offset + 1)
        return first, AbortedTxn(producer_id, first, marker_offset, lso)

    def first_offset(self, producer_id: int) -> int | None:
        return self._first.get(producer_id)

    def first_offsets(self) -> Iterable[int]:
        return self._first.values()


def aborted_from(batches: Iterable[tuple[BatchHeader, Callable[[], bytes]]], from_offset: int) -> Iterator[AbortedTxn]:
    """The aborted transactions whose ABORT marker is at or after `from_offset`, from a log's
    (header, read the batch) pairs in offset order from its start. Only those markers are
    read; earlier ones end their transaction whatever their kind."""
    txns = OpenTransactions()
    for header, read in batches:
        if not is_marker(header):
            if header.is_transactional and not header.is_control:
                txns.begin(header.producer_id, header.base_offset)
            continue
        # an emptied marker (compaction removed its record) ends a transaction none of whose
        # records are left: indexing it would change nothing
        aborted = header.base_offset >= from_offset and header.record_count > 0 and control_type(read()) == ABORT
        _first, txn = txns.end(header.producer_id, header.base_offset, aborted)
        if txn is not None:
            yield txn
