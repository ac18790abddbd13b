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

Transactional batches and their markers also go to the partition's TransactionState
(transaction_state.py). A marker is checked before it is appended: an epoch below the
producer's is INVALID_PRODUCER_EPOCH, a coordinator epoch below the last marker's is
TRANSACTION_COORDINATOR_FENCED (Kafka's appendEndTxnMarker); it moves the producer's epoch
but not its sequences.

When a partition is opened (or truncated) the state is loaded from the newest snapshot at
or below the log end (producer_snapshot.py) and the batch headers past it are replayed, as
Kafka's does, so a restart reads the log's tail, not the whole log; without a snapshot the
replay starts at the log start. A marker ends its producer's transaction whatever its kind
(the aborted ones are in the log's own index), so the replay reads only each producer's last
marker, for the coordinator epoch it carries. A snapshot older than the log start (retention,
DeleteRecords) loses the producers whose batches all lie below it, as Kafka's truncateHead.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from segment.log import PartitionLog
from wire.control_batch import ABORT, control_type, is_marker, marker_coordinator_epoch
from wire.record_batch import BatchHeader

from segment.txn_index import AbortedTxn

from .producer_snapshot import ProducerRecord, ProducerSnapshots, Snapshot
from .transaction_state import CompletedTxn, TransactionState

MAX_REMEMBERED_BATCHES = 5
INT32_MAX = 0x7FFFFFFF


class ProducerFenced(Exception):
    """INVALID_PRODUCER_EPOCH."""


class OutOfOrderSequence(Exception):
    """OUT_OF_ORDER_SEQUENCE_NUMBER."""


class CoordinatorFenced(Exception):
    """TRANSACTION_COORDINATOR_FENCED: a marker from a coordinator older than the last one's."""


@dataclass(frozen=True, slots=True)
class RememberedBatch:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class ActiveProducer:
    """What DescribeProducers shows of one producer (-1: not known)."""
    producer_id: int
    epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    coordinator_epoch: int = -1
    batches: deque = field(default_factory=lambda: deque(maxlen=MAX_REMEMBERED_BATCHES))

    @property
    def last_seq(self) -> int | None:
        return self.batches[-1].last_seq if self.batches else None


def _or_none(offset: int | None) -> int:
    return -1 if offset is None else offset


def _next_seq(seq: int) -> int:
    return 0 if seq == INT32_MAX else seq + 1


class ProducerStateTable:
    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}
        self.transactions = TransactionState()
        self.snapshot_offset = -1  # the snapshot it was loaded from (-1: none)
        self.replayed = 0  # batch headers read when it was loaded: what a restart cost

    def check(self, header: BatchHeader, sequences: bool = True) -> RememberedBatch | None:
        """Validate a producer's batch before it is appended.

        Returns the remembered batch if this one is a duplicate, None if it is
        new and may be appended; raises ProducerFenced / OutOfOrderSequence.
        `sequences` False: a coordinator's batch written for the producer (TxnOffsetCommit's,
        always at sequence 0 as Kafka writes it), whose epoch alone is checked (Kafka's
        AppendOrigin.COORDINATOR).
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
        if not sequences:
            return None
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

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Validate a transaction marker before it is appended; raises ProducerFenced / CoordinatorFenced."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise ProducerFenced(f"marker for producer {producer_id} epoch {producer_epoch} < current {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise CoordinatorFenced(f"marker for producer {producer_id} from coordinator epoch "
                                    f"{coordinator_epoch} < {entry.coordinator_epoch}")

    def record_marker(self, header: BatchHeader, offset: int, coordinator_epoch: int,
                      aborted: bool) -> AbortedTxn | None:
        """Remember an appended marker: it ends the producer's transaction. Returns the entry
        the log's aborted-transaction index needs for an ABORT."""
        entry = self._entry(header)
        if entry is not None:
            entry.coordinator_epoch = max(entry.coordinator_epoch, coordinator_epoch)
        return self.transactions.marker(header.producer_id, offset, aborted)

    def record(self, header: BatchHeader, first_offset: int, last_offset: int, timestamp: int) -> None:
        """Remember an appended producer batch (also used when replaying the log)."""
        if not header.has_producer_id:
            return
        entry = self._entry(header)
        if entry is None:
            return
        if header.is_transactional:
            self.transactions.transactional_batch(header.producer_id, first_offset)
        entry.batches.append(
            RememberedBatch(header.base_sequence, header.last_sequence, first_offset, last_offset, timestamp)
        )

    def _entry(self, header: BatchHeader) -> ProducerEntry | None:
        """The producer's entry, new when its epoch is newer; None when the batch's epoch is older."""
        entry = self._producers.get(header.producer_id)
        if entry is None or header.producer_epoch > entry.epoch:
            kept = entry.coordinator_epoch if entry is not None else -1
            entry = ProducerEntry(epoch=header.producer_epoch, coordinator_epoch=kept)
            self._producers[header.producer_id] = entry
        elif header.producer_epoch < entry.epoch:
            return None
        return entry

    def record_stored(self, header: BatchHeader, first_offset: int, last_offset: int, timestamp: int,
                      batch) -> AbortedTxn | None:
        """A batch copied to the log (a follower's): a marker or a producer's; what record_marker returns."""
        if is_marker(header):
            if not header.record_count:  # emptied by compaction: its kind and epoch went with its record
                return self.record_marker(header, first_offset, -1, False)
            return self.record_marker(header, first_offset, marker_coordinator_epoch(batch),
                                      control_type(batch) == ABORT)
        if not header.is_control:
            self.record(header, first_offset, last_offset, timestamp)
        return None

    @classmethod
    def load(cls, log: PartitionLog, snapshots: ProducerSnapshots) -> ProducerStateTable:
        """The state after every batch of `log`: its newest usable snapshot, then the batch
        headers past it (`replayed` counts them)."""
        snap = snapshots.latest_at_or_below(log.log_end_offset)
        table = cls() if snap is None else cls.from_snapshot(snap, log.log_start_offset)
        table.snapshot_offset = -1 if snap is None else snap.offset
        table._replay(log, log.log_start_offset if snap is None else max(snap.offset, log.log_start_offset))
        return table

    def _replay(self, log: PartitionLog, start: int) -> None:
        """Replay the log's batch headers from `start`, then read each producer's last marker."""
        last_markers: dict[int, int] = {}
        for header in log.batch_headers(start):
            self.replayed += 1
            if is_marker(header):
                if self._entry(header) is not None and header.record_count:
                    last_markers[header.producer_id] = header.base_offset
                self.transactions.marker(header.producer_id, header.base_offset, aborted=False)
            elif not header.is_control:
                self.record(header, header.base_offset, header.last_offset, header.max_timestamp)
        for producer_id, offset in last_markers.items():
            batch = log.read_bytes(log.read(offset, 1, offset + 1)[0])
            entry = self._producers[producer_id]
            entry.coordinator_epoch = max(entry.coordinator_epoch, marker_coordinator_epoch(batch))

    def snapshot(self, offset: int) -> Snapshot:
        """A copy of the state as of `offset` (the log end now), to be written elsewhere."""
        producers = tuple(
            ProducerRecord(pid, entry.epoch, entry.coordinator_epoch,
                           _or_none(self.transactions.open_first_offset(pid)),
                           tuple((b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp)
                                 for b in entry.batches))
            for pid, entry in self._producers.items())
        unreplicated = tuple((t.producer_id, t.first_offset, t.last_offset) for t in self.transactions.unreplicated)
        return Snapshot(offset, producers, unreplicated)

    @classmethod
    def from_snapshot(cls, snap: Snapshot, log_start: int) -> ProducerStateTable:
        table = cls()
        for p in snap.producers:
            batches = [RememberedBatch(*b) for b in p.batches if b[3] >= log_start]
            if p.batches and not batches and p.txn_first_offset < 0:
                continue  # every batch it wrote is gone from the log
            table._producers[p.producer_id] = ProducerEntry(
                p.epoch, p.coordinator_epoch, deque(batches, maxlen=MAX_REMEMBERED_BATCHES))
            if p.txn_first_offset >= 0:  # still open: it bounds the last stable offset
                table.transactions.transactional_batch(p.producer_id, max(p.txn_first_offset, log_start))
        table.transactions.unreplicated = [CompletedTxn(*t) for t in snap.unreplicated]
        return table

    def in_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """The producer has a transaction open here at this epoch. A batch of a newer epoch is
        the next transaction of a producer whose coordinator bumped the epoch at the end of the
        last one (transactions V2), whose marker may still be on its way: it is not this one's."""
        entry = self._producers.get(producer_id)
        return (entry is not None and entry.epoch == producer_epoch
                and self.transactions.open_first_offset(producer_id) is not None)

    def active(self) -> list[ActiveProducer]:
        """Every producer the partition remembers, by producer id (Kafka's activeProducers)."""
        out = []
        for pid, entry in sorted(self._producers.items()):
            last = entry.batches[-1] if entry.batches else None
            txn_start = self.transactions.open_first_offset(pid)
            out.append(ActiveProducer(pid, entry.epoch, last.last_seq if last else -1,
                                      last.timestamp if last else -1, entry.coordinator_epoch,
                                      -1 if txn_start is None else txn_start))
        return out

    def __len__(self) -> int:
        return len(self._producers)
