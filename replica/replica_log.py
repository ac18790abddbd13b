"""A replica's log and what must stay in step with it (Kafka's UnifiedLog over its LocalLog).

The engine's PartitionLog holds the batches; derived from them, and changed with every write,
are the producer-state table (producer_state.py) with its snapshot files (producer_snapshot.py),
the leader's verification guards (txn_verification.py), and, while a log-dir move commits, the
future log every append is copied into. This class carries out each write on all of them
together: a producer's batch is checked against its producer's sequence and epoch, appended,
copied, and recorded; a marker indexes the transaction it aborts; a truncation drops the
snapshots past the cut before the log can grow back over them and rebuilds the producer state
from what is left; a swap to a moved log starts its snapshots anew.

It is apart from Partition (partition.py) because it is a different question: Partition
decides whether this replica may write and when a write counts (its role, leader epoch, ISR,
min.insync.replicas, the topic's record checks, the high watermark); this class keeps the one
invariant that the producer state describes exactly the batches of the log it serves from.
Handlers reach it only through Partition.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from segment.log import AppendInfo, FileRegion, FlushGroup, PartitionLog
from wire.control_batch import build_control_batch
from wire.record_batch import BatchHeader, parse_header

from .future_replica import FutureReplica
from .partition_errors import InvalidTxnState
from .producer_snapshot import PendingSnapshot, ProducerSnapshots
from .producer_state import ProducerStateTable
from .readable_partition import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, NO_TIMESTAMP
from .txn_verification import VerificationGuard, VerificationGuards

log = logging.getLogger(__name__)


class ReplicaLog:
    def __init__(self, name: str, log: PartitionLog, clock: Callable[[], int],
                 changed: Callable[[], None] = lambda: None) -> None:
        """`name`: topic-partition, for messages; `clock`: milliseconds, the appends' timestamps;
        `changed()`: told after every append, truncation and swap (change_feed.py)."""
        self.name = name
        self.log = log  # replaced by swap_in: read it through this object, never keep it
        self._clock = clock
        self._changed = changed
        self._snapshots = ProducerSnapshots(log.state_dir)
        # A new partition's directory holds no snapshot: three listings of it per partition
        # held the event loop 100-200 ms at a time while 20,000 partitions were created.
        self.producers = ProducerStateTable() if log.made_empty else self._load_producers()
        self._snapshot_at = self.producers.snapshot_offset  # the offset of the newest snapshot taken
        self.verifications = VerificationGuards()
        self._mirror: FutureReplica | None = None  # a log-dir move's commit window: appends go to both

    # ----- appends ---------------------------------------------------------------------

    def needs_verification(self, header: BatchHeader) -> bool:
        """A transactional batch that would open its producer's transaction here."""
        return header.is_transactional and not self.producers.in_transaction(header.producer_id,
                                                                             header.producer_epoch)

    def forget_verifications(self) -> None:
        self.verifications = VerificationGuards()

    def append_as_leader(self, batch: bytearray, header: BatchHeader, leader_epoch: int,
                         record_keys: set[bytes] | None, coordinator: bool,
                         verified: VerificationGuard | None) -> tuple[AppendInfo, bool]:
        """Partition.append_as_leader's write, once the partition may take it; returns (info,
        was_duplicate). Raises ProducerFenced / OutOfOrderSequence before writing,
        InvalidTxnState, or a StorageError from the log."""
        duplicate = self.producers.check(header, sequences=not coordinator)
        if duplicate is not None:
            info = AppendInfo(duplicate.first_offset, duplicate.last_offset, duplicate.timestamp, -1,
                              self.log.log_start_offset)
            return info, True
        if verified is not None and self.needs_verification(header) and not self.verifications.holds(verified):
            raise InvalidTxnState(f"producer {header.producer_id}'s transaction ended while its batch for "
                                  f"{self.name} was verified")
        info = self.log.append(batch, leader_epoch, self._clock(), record_keys)
        self._changed()
        self._mirrored(batch)
        self.producers.record(header, info.first_offset, info.last_offset, info.max_timestamp)
        if header.is_transactional:
            self.verifications.end(header.producer_id)
        return info, False

    def append_txn_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                          commit: bool, leader_epoch: int) -> AppendInfo:
        """Raises ProducerFenced, CoordinatorFenced, StorageError."""
        self.producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
        batch = build_control_batch(producer_id, producer_epoch, coordinator_epoch, commit, now := self._clock())
        info = self.log.append(batch, leader_epoch, now, None)
        self._changed()
        self._mirrored(batch)
        aborted = self.producers.record_marker(parse_header(batch), info.first_offset, coordinator_epoch, not commit)
        if aborted is not None:
            self.log.append_aborted_txn(aborted)
        self.verifications.end_by_marker(producer_id, producer_epoch)
        return info

    def append_as_follower(self, batch: bytes | memoryview) -> None:
        """One whole batch exactly as the leader stored it."""
        info = self.log.append_as_follower(batch)
        self._changed()
        self._mirrored(batch)
        header = parse_header(batch)
        aborted = self.producers.record_stored(header, info.first_offset, info.last_offset, info.max_timestamp, batch)
        if aborted is not None:
            self.log.append_aborted_txn(aborted)

    # ----- truncations -----------------------------------------------------------------

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.stop_mirror()
        self.log.truncate_fully_and_start_at(offset)
        self._changed()
        self._snapshots.delete_all()  # they describe batches the log no longer holds
        self.producers = self._load_producers()
        self._snapshot_at = -1

    def truncate_to(self, offset: int) -> None:
        self.stop_mirror()
        self.log.truncate_to(offset)
        self._changed()
        # the snapshots past the cut go (durably) before the log can grow back over them
        self._snapshots.truncate_after(self.log.log_end_offset)
        self.producers = self._load_producers()
        self._snapshot_at = min(self._snapshot_at, self.producers.snapshot_offset)

    # ----- producer-state snapshots (producer_snapshot.py) -------------------------------

    def _load_producers(self) -> ProducerStateTable:
        table = ProducerStateTable.load(self.log, self._snapshots)
        if table.replayed:
            log.info("%s: producer state from the snapshot at %d and %d batch headers past it",
                     self.name, table.snapshot_offset, table.replayed)
        return table

    def take_producer_snapshot(self) -> PendingSnapshot | None:
        """On the loop: copy the producer state at the log end, if the log moved since the last
        snapshot; returns the write to make in a worker thread, or None."""
        end = self.log.log_end_offset
        if end == self._snapshot_at or (self._snapshot_at == -1 and end == self.log.log_start_offset):
            return None  # nothing new, or an empty log never snapshotted: a replay reads nothing
        self._snapshot_at = end
        return PendingSnapshot(self.name, self._snapshots, self.producers.snapshot(end), self._snapshots.generation)

    # ----- reads that need more than the log's own ---------------------------------------

    def offset_for_timestamp(self, timestamp: int, upper: int) -> tuple[int, int] | None:
        """Kafka's Partition.fetchOffsetForTimestamp: a position (EARLIEST_TIMESTAMP,
        LATEST_TIMESTAMP: `upper`), or the record found through the time index, never one at
        or past `upper` (what the reader may see)."""
        if timestamp == EARLIEST_TIMESTAMP:
            return self.log.log_start_offset, NO_TIMESTAMP
        if timestamp == LATEST_TIMESTAMP:
            return upper, NO_TIMESTAMP
        found = self.log.max_timestamp() if timestamp == MAX_TIMESTAMP else self.log.offset_for_timestamp(timestamp)
        return found if found is not None and found[0] < upper else None

    # ----- a log-dir move (broker/storage/log_dir_move.py) ------------------------------

    @staticmethod
    def flush_together(group: FlushGroup, replica_logs: list[ReplicaLog]) -> None:
        """flush() of these logs of one flush group with one flush of the group (a log swapped
        into another group since it asked is fsynced on its own), then their future logs."""
        mirrors = [r._mirror for r in replica_logs]  # read first: what a flush covers is in both
        logs = [r.log for r in replica_logs]
        group.flush_logs([plog for plog in logs if plog.flush_group is group])
        for plog in logs:
            if plog.flush_group is not group:
                plog.flush()
        for mirror in mirrors:
            if mirror is not None:
                mirror.log.flush()

    def mirror_into(self, future: FutureReplica) -> None:
        """Bring `future` level with the log now (its store's appends written), and copy every
        later append into it at once: until the move's commit point is durable both logs hold
        every acknowledged record, so a crash on either side of it loses none."""
        future.catch_up(self.log)
        self._mirror = future

    @property
    def mirroring(self) -> bool:
        """False once a truncation or a failed copy ended the window: the move must not commit."""
        return self._mirror is not None

    def swap_in(self, future: FutureReplica) -> PartitionLog:
        """Serve from the future log from now on (its producer state is this log's); returns
        the replaced log."""
        future.align(self.log)
        old, self.log, self._mirror = self.log, future.log, None
        # the next snapshot goes to the new directory; one left there by an earlier log is not this one's
        self._snapshots = ProducerSnapshots(self.log.state_dir)
        self._snapshots.delete_all()
        self._snapshot_at = -1
        self._changed()
        return old

    def _mirrored(self, batch) -> None:
        if self._mirror is None:
            return
        try:
            self._mirror.append(bytes(batch))
        except Exception:
            log.exception("copying an append of %s into its future log failed: the move stops", self.name)
            self._mirror = None

    def stop_mirror(self) -> None:
        """The window ends without a swap (a move stopped, or this log was truncated)."""
        self._mirror = None

    def regions_for(self, future: FutureReplica, max_bytes: int) -> list[FileRegion]:
        """On the loop: where this log's batches past the future's end lie (read them with
        read_bytes, in a thread if need be)."""
        return future.regions_behind(self.log, max_bytes)
