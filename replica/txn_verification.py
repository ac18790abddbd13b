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
and dropped by any marker or transactional batch of the producer; the batch is appended
only while the guard it was verified with is still the producer's, else INVALID_TXN_STATE.
The guards live only in the leader's memory, as Kafka's: a new leader verifies anew.
"""

from __future__ import annotations


class VerificationGuard:
    """One verification of one producer's batch; compared by identity."""

    __slots__ = ("producer_id",)

    def __init__(self, producer_id: int) -> None:
        self.producer_id = producer_id


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
        """A marker or the transaction's first batch was appended: what was verified is settled."""
        self._by_producer.pop(producer_id, None)
