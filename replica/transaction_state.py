"""Transactions in one partition: what is open, what was aborted, where the log is stable.

Kafka's ProducerStateManager keeps, beside each producer's sequences (producer_state.py),
its open transaction. Here:

- A transactional batch (attributes bit 4, not a control batch) of a producer with no open
  transaction opens one at the batch's first offset.
- A marker (control batch, wire/control_batch.py) ends it and yields a CompletedTxn: the
  producer, the transaction's first offset (the marker's own offset when nothing was open, as
  Kafka does), the marker's offset as last offset, and whether it was aborted.
- The first unstable offset is the smallest first offset of an open transaction or of a
  completed one whose marker is not yet below the high watermark (Kafka's rule: until its
  marker is replicated a transaction may still be lost with it, so it counts as open). The
  last stable offset is min(first unstable offset, high watermark).
- Aborted transactions are kept in marker order; read_committed fetches ask for those that
  overlap the offsets they return (Kafka's collectAbortedTransactions). Those wholly below
  the log start offset are dropped as it moves.

The state is rebuilt from the log when a partition is opened or truncated, like the rest of
the producer state, so an open transaction found after a crash is known.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    aborted: bool


class TransactionState:
    def __init__(self) -> None:
        self._open: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._unreplicated: list[CompletedTxn] = []  # markers not yet below the HW
        self._aborted: list[CompletedTxn] = []  # by last offset (the order markers are appended)
        self._aborted_ends: list[int] = []  # their last offsets, for bisect

    def transactional_batch(self, producer_id: int, first_offset: int) -> None:
        self._open.setdefault(producer_id, first_offset)

    def marker(self, producer_id: int, offset: int, aborted: bool) -> CompletedTxn:
        txn = CompletedTxn(producer_id, self._open.pop(producer_id, offset), offset, aborted)
        self._unreplicated.append(txn)
        if aborted:
            self._aborted.append(txn)
            self._aborted_ends.append(offset)
        return txn

    def open_first_offset(self, producer_id: int) -> int | None:
        return self._open.get(producer_id)

    def last_stable_offset(self, high_watermark: int) -> int:
        """min(first unstable offset, high watermark)."""
        self._unreplicated = [t for t in self._unreplicated if t.last_offset >= high_watermark]
        firsts = [*self._open.values(), *(t.first_offset for t in self._unreplicated)]
        return min([high_watermark, *firsts])

    def aborted_between(self, start: int, upper: int, log_start_offset: int) -> list[CompletedTxn]:
        """Aborted transactions overlapping [start, upper): their marker at or after `start`, their
        first offset before `upper`. Those wholly below the log start are forgotten first."""
        self.log_start_moved(log_start_offset)
        i = bisect.bisect_left(self._aborted_ends, start)
        return [t for t in self._aborted[i:] if t.first_offset < upper]

    def log_start_moved(self, log_start_offset: int) -> None:
        """Forget aborted transactions whose marker is below the log start (retention, DeleteRecords)."""
        i = bisect.bisect_left(self._aborted_ends, log_start_offset)
        if i:
            del self._aborted[:i], self._aborted_ends[:i]
