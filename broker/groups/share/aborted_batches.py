"""Which batches of a read belong to aborted transactions: what a read_committed share group
(share.isolation.level) archives instead of handing out, as Kafka's SharePartition does.

The rule is a read_committed consumer's (Kafka's Fetcher): walk the batches in offset order
with the partition's aborted transactions (AbortedTxn: producer id, first offset, the ABORT
marker's offset) sorted by first offset; a producer's aborted transaction is open from the first
batch that reaches its first offset until its ABORT marker (a control batch of that producer),
and a transactional batch of a producer with one open is aborted. Pure logic.
"""

from __future__ import annotations

from collections import deque

from segment.txn_index import AbortedTxn
from wire.record_batch import BatchHeader


class AbortedBatches:
    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self._pending = deque(sorted(aborted, key=lambda a: a.first_offset))
        self._open: set[int] = set()  # producer ids whose aborted transaction the walk is inside

    def is_aborted(self, header: BatchHeader) -> bool:
        """Whether this batch, the next one of the walk, is an aborted transaction's data."""
        while self._pending and self._pending[0].first_offset <= header.last_offset:
            self._open.add(self._pending.popleft().producer_id)
        if header.is_control:
            self._open.discard(header.producer_id)  # its marker ends the transaction
            return False
        return header.is_transactional and header.producer_id in self._open
