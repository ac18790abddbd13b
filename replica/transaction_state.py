"""Transactions in one partition: what is open, and where the log is stable.

Kafka's ProducerStateManager keeps, beside each producer's sequences (producer_state.py),
its open transaction. Here:

- A transactional batch opens its producer's transaction and a marker ends it, by the rules
  both this state and the logs' rebuild of their index follow (segment/txn_replay.py). An
  ABORT marker yields the AbortedTxn the partition hands to its log's aborted-transaction
  index (segment/txn_index.py), which read_committed fetches ask; the index, not this state,
  keeps them, so they cost no memory here and a reopened log does not replay them.
- The first unstable offset is the smallest first offset of an open transaction or of a
  completed one whose marker is not yet below the high watermark (Kafka's rule: until its
  marker is replicated a transaction may still be lost with it, so it counts as open). The
  last stable offset is min(first unstable offset, high watermark).

The state is loaded with the rest of the producer state (a snapshot, then the log's batch
headers past it) when a partition is opened or truncated, so an open transaction found after
a crash is known.
"""

from __future__ import annotations

from dataclasses import dataclass

from segment.txn_index import AbortedTxn
from segment.txn_replay import OpenTransactions


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset


class TransactionState:
    def __init__(self) -> None:
        self._open = OpenTransactions()
        self.unreplicated: list[CompletedTxn] = []  # markers not yet below the HW

    def transactional_batch(self, producer_id: int, first_offset: int) -> None:
        self._open.begin(producer_id, first_offset)

    def marker(self, producer_id: int, offset: int, aborted: bool) -> AbortedTxn | None:
        """A marker at `offset` ends the producer's transaction; an ABORT returns its index entry."""
        first, txn = self._open.end(producer_id, offset, aborted)
        self.unreplicated.append(CompletedTxn(producer_id, first, offset))
        return txn

    def open_first_offset(self, producer_id: int) -> int | None:
        return self._open.first_offset(producer_id)

    def last_stable_offset(self, high_watermark: int) -> int:
        """min(first unstable offset, high watermark)."""
        self.unreplicated = [t for t in self.unreplicated if t.last_offset >= high_watermark]
        firsts = [*self._open.first_offsets(), *(t.first_offset for t in self.unreplicated)]
        return min([high_watermark, *firsts])
