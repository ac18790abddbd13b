"""Verification guards: a leader's proof that a transaction's first batch in this partition was
checked with its coordinator (KIP-890 part 1, Kafka's VerificationGuard).

A transactional batch of a producer with no open transaction here (at the batch's epoch: under
transactions V2 each transaction has its own) would open one, and an open transaction holds the
last stable offset until its marker comes. If that batch is a late retry
of a transaction already ended (its marker written while the batch was delayed), no marker
will ever come and the partition's read_committed consumers stall until the coordinator's
timeout. So before appending such a batch the leader asks the coordinator whether this
partition is in the producer's current transaction. The question takes a round trip during
which the transaction may end: the guard covers that gap. It is made before the question
and dropped by any transactional batch of the producer and by its markers, but one: under
transactions V2 the marker that ends a transaction carries the epoch its end bumped to, which
is the next transaction's, so a guard of a V2 batch at the marker's epoch covers the next
transaction's first batch, not a late one of the ended transaction (whose epoch is older), and
stays (Kafka's UnifiedLog, isV2NextTransactionStarted). Without that exception a V2 producer's
next transaction, verified while its last one's marker is written, would be refused
INVALID_TXN_STATE, fatal to the client. The batch is appended only while the guard it was
verified with is still the producer's, else INVALID_TXN_STATE. The guards live only in the
leader's memory, as Kafka's: a new leader verifies anew.
"""

from __future__ import annotations

NO_EPOCH = -1


class VerificationGuard:
    """One verification of one producer's batch; compared by identity."""

    __slots__ = ("producer_id", "epoch", "epoch_bumps")

    def __init__(self, producer_id: int) -> None:
        self.producer_id = producer_id
        self.epoch = NO_EPOCH  # the newest epoch of a batch it covers (Kafka's VerificationStateEntry.epoch)
        self.epoch_bumps = False  # verified for a transactions V2 producer (Produce v12+, TxnOffsetCommit v5+)

    def covers(self, producer_epoch: int, epoch_bumps: bool) -> None:
        """The batch being verified under it: its version is the first verification's, its epoch
        the newest (a retried batch of a newer epoch moves it up), as Kafka's entry keeps them."""
        if self.epoch == NO_EPOCH:
            self.epoch_bumps = epoch_bumps
        self.epoch = max(self.epoch, producer_epoch)


class VerificationGuards:
    def __init__(self) -> None:
        self._by_producer: dict[int, VerificationGuard] = {}

    def start(self, producer_id: int) -> VerificationGuard:
        """The producer's guard: a verification already in flight shares it (a retried batch)."""
        guard = self._by_producer.get(producer_id)
        if guard is None:
            guard = self._by_producer[producer_id] = VerificationGuard(producer_id)
        return guard

    def holds(self, guard: VerificationGuard) -> bool:
        return self._by_producer.get(guard.producer_id) is guard

    def end(self, producer_id: int) -> None:
        """The transaction's first batch was appended: what was verified is settled."""
        self._by_producer.pop(producer_id, None)

    def end_by_marker(self, producer_id: int, marker_epoch: int) -> None:
        """A marker of the producer was appended: its transaction ended, so a guard made
        before is of a late batch, unless it is a V2 guard at the marker's own epoch: the next
        transaction's."""
        guard = self._by_producer.get(producer_id)
        if guard is not None and not (guard.epoch_bumps and guard.epoch == marker_epoch):
            del self._by_producer[producer_id]
