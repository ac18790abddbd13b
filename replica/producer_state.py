"""Idempotent producer state of one partition: Kafka's ProducerStateManager, in small.

For each producer id the partition remembers its epoch and the last five
batches it appended (first/last sequence and the offsets they got), because
a producer has at most five requests in flight and may resend any of them.

- A resent batch that matches a remembered one is a duplicate: answer with the
  offsets it got the first time and append nothing.
- A batch whose first sequence is not last+1 is OUT_OF_ORDER_SEQUENCE_NUMBER.
- An epoch below the current one is fenced (INVALID_PRODUCER_EPOCH); a new
  epoch must start at sequence 0.
- An unknown producer id is accepted at any sequence (KIP-360): its state
  may have been lost to retention, and refusing would wedge the producer.

The state is rebuilt from batch headers when a partition is opened, so it
survives restarts the same way Kafka's does (from the log).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from wire.record_batch import BatchHeader

MAX_REMEMBERED_BATCHES = 5
INT32_MAX = 0x7FFFFFFF


class ProducerFenced(Exception):
    """INVALID_PRODUCER_EPOCH."""


class OutOfOrderSequence(Exception):
    """OUT_OF_ORDER_SEQUENCE_NUMBER."""


@dataclass(frozen=True, slots=True)
class RememberedBatch:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque = field(default_factory=lambda: deque(maxlen=MAX_REMEMBERED_BATCHES))

    @property
    def last_seq(self) -> int | None:
        return self.batches[-1].last_seq if self.batches else None


def _next_seq(seq: int) -> int:
    return 0 if seq == INT32_MAX else seq + 1


class ProducerStateTable:
    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}

    def check(self, header: BatchHeader) -> RememberedBatch | None:
        """Validate a producer's batch before it is appended.

        Returns the remembered batch if this one is a duplicate, None if it is
        new and may be appended; raises ProducerFenced / OutOfOrderSequence.
        """
        if not header.has_producer_id:
            return None
        entry = self._producers.get(header.producer_id)
        if entry is None:
            return None
        if header.producer_epoch < entry.epoch:
            raise ProducerFenced(
                f"producer {header.producer_id} epoch {header.producer_epoch} < current {entry.epoch}"
            )
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise OutOfOrderSequence(
                    f"new epoch {header.producer_epoch} must start at sequence 0, got {header.base_sequence}"
                )
            return None
        for batch in entry.batches:
            if batch.first_seq == header.base_sequence and batch.last_seq == header.last_sequence:
                return batch
        last = entry.last_seq
        if last is not None and header.base_sequence != _next_seq(last):
            raise OutOfOrderSequence(
                f"producer {header.producer_id}: expected sequence {_next_seq(last)}, got {header.base_sequence}"
            )
        return None

    def record(self, header: BatchHeader, first_offset: int, last_offset: int, timestamp: int) -> None:
        """Remember an appended batch (also used when replaying the log)."""
        if not header.has_producer_id:
            return
        entry = self._producers.get(header.producer_id)
        if entry is None or header.producer_epoch > entry.epoch:
            entry = ProducerEntry(epoch=header.producer_epoch)
            self._producers[header.producer_id] = entry
        elif header.producer_epoch < entry.epoch:
            return
        entry.batches.append(
            RememberedBatch(header.base_sequence, header.last_sequence, first_offset, last_offset, timestamp)
        )

    def truncate(self) -> None:
        """Forget everything (after log truncation the log is replayed again)."""
        self._producers.clear()

    def __len__(self) -> int:
        return len(self._producers)
