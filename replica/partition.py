"""Kafka's Partition: one partition's log and every replication decision about it.

A partition is either the leader (it appends producers' batches, stamps its leader epoch,
tracks each follower's LEO from its fetches, moves the high watermark, parks acks=all
produces until the HW passes them, proposes ISR changes) or a follower (it appends the
leader's batches exactly as the leader stored them and takes the HW the leader sends).
Handlers call these entry points and never touch the log (readable_partition.py: what they
read); the broker's upkeep (retention, config changes, fsync, cleaning) goes through it too.
A write, once allowed, is carried out by the replica's log (replica_log.py), which keeps the
producer state and its snapshots in step with the batches.

A single broker leads every partition with itself as the only replica and ISR, so the HW
follows what the leader counts as written: the log end, or with flush.messages=1 the end
an fsync covered (`publish(upto)`), so a consumer never reads what a crash could take back.

Leadership comes from metadata (`make_leader` / `make_follower`, called by the replica
manager with the state the controller store holds); epochs fence the rest: a request naming
an older leader epoch gets FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH.
"""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial

from segment.log import AppendInfo, FileRegion, FlushGroup, LogConfig, PartitionLog
from segment.compaction.cleaning_policy import retention_deletes
from wire.error_codes import ErrorCode
from wire.record_batch import BatchHeader
from wire.record_walk import RecordSummary

from .change_feed import ChangeFeed
from .fsynced_end import FsyncedEnd
from .isr_maintenance import IsrMaintenance
from .leader_state import LeaderState
from .partition_errors import DeleteOffsetOutOfRange, NotLeader, RecordsNotDeletable
from .partition_state import PartitionState
from .producer_state import ActiveProducer, ProducerStateTable
from .purgatory import PartitionPurgatory
from .record_checks import check_records
from .readable_partition import FetchIsolation
from .replica_log import ReplicaLog
from .txn_verification import VerificationGuard

log = logging.getLogger(__name__)

DELETE_TO_HIGH_WATERMARK = -1  # DeleteRecords' offset for "up to the high watermark"


def now_ms() -> int:
    return int(time.time() * 1000)


class Partition:
    read_only = False  # it takes produce, DeleteRecords and OffsetForLeaderEpoch (readable_partition.py)

    def __init__(self, topic: str, index: int, log: PartitionLog, node_id: int, config: LogConfig,
                 min_insync_replicas: int, lag_time_max_ms: int, lead_alone: bool = True,
                 changes: ChangeFeed | None = None) -> None:
        """`min_insync_replicas`, `lag_time_max_ms`: the broker's settings, whose defaults live in
        its settings table only. `lead_alone`: a single broker leads at once; a cluster member
        waits for make_leader or make_follower (the controller store's state), serving nothing
        until then. `changes`: the broker's feed of changed partitions (change_feed.py), told
        of this one now and after every change to its log."""
        self.topic = topic
        self.index = index
        changed = (lambda: None) if changes is None else partial(changes.changed, self)
        self._replica_log = ReplicaLog(f"{topic}-{index}", log, now_ms, changed)
        self.config = config
        self.node_id = node_id
        self.min_insync_replicas = min_insync_replicas
        self.lag_time_max_ms = lag_time_max_ms
        self.state = PartitionState(node_id if lead_alone else -1, 0, 0, (node_id,), (node_id,))
        self.leader: LeaderState | None = LeaderState(
            node_id, [node_id], [node_id], log.log_end_offset, log.log_end_offset, now_ms, lag_time_max_ms
        ) if lead_alone else None
        self._follower_hw = 0
        self._fsynced = FsyncedEnd(log.log_start_offset)
        self.purgatory = PartitionPurgatory()
        self.isr_maintenance = IsrMaintenance(self)  # the leader's dealings with its followers
        changed()  # hosted now: each periodic task's first round looks at it

    @property
    def replica_log(self) -> ReplicaLog:
        """The log with its producer state, for the broker's storage services that keep it, and
        decide nothing about replication: producer-state snapshots and a log-dir move."""
        return self._replica_log

    @property
    def _log(self) -> PartitionLog:
        return self._replica_log.log  # never kept: a log-dir move swaps it

    @property
    def producers(self) -> ProducerStateTable:
        return self._replica_log.producers

    def active_producers(self) -> list[ActiveProducer]:
        return self.producers.active()

    def _check_leader(self) -> None:
        if self.leader is None:
            raise NotLeader(f"{self.node_id} is not the leader of {self.topic}-{self.index}")

    # ----- what handlers read (the ReadablePartition of readable_partition.py) --------

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch

    @property
    def is_leader(self) -> bool:
        return self.leader is not None

    @property
    def high_watermark(self) -> int:
        return self.leader.high_watermark if self.leader is not None else self._follower_hw

    @property
    def last_stable_offset(self) -> int:
        """Below it no transaction is still open; without transactions, the high watermark."""
        return self.producers.transactions.last_stable_offset(self.high_watermark)

    def aborted_transactions(self, start: int, upper: int) -> list:
        """Aborted transactions (AbortedTxn) overlapping [start, upper): a read_committed fetch's."""
        return self._log.aborted_txns(start, upper)

    @property
    def isr(self) -> tuple[int, ...]:
        return tuple(sorted(self.leader.isr)) if self.leader is not None else self.state.isr

    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def size_in_bytes(self) -> int:
        return self._log.size_in_bytes

    def epoch_error(self, current_leader_epoch: int) -> ErrorCode | None:
        return self.state.epoch_error(current_leader_epoch)

    def last_fetchable_offset(self, isolation: FetchIsolation) -> int:
        """Where a read stops: the log end (a follower), the HW (a consumer), the LSO (read_committed)."""
        if isolation is FetchIsolation.LOG_END:
            return self._log.log_end_offset
        if isolation is FetchIsolation.TXN_COMMITTED:
            return self.last_stable_offset
        return self.high_watermark

    def read(self, offset: int, max_bytes: int, isolation: FetchIsolation) -> list[FileRegion]:
        return self._log.read(offset, max_bytes, self.last_fetchable_offset(isolation))

    def read_bytes(self, region: FileRegion) -> bytes:
        return self._log.read_bytes(region)

    def fetch_offset_for_timestamp(self, timestamp: int, isolation: FetchIsolation) -> tuple[int, int] | None:
        """Kafka's Partition.fetchOffsetForTimestamp: a position, or the record found through the
        time index, never one at or past what `isolation` may read."""
        return self._replica_log.offset_for_timestamp(timestamp, self.last_fetchable_offset(isolation))

    # ----- the log's upkeep: DeleteRecords, retention, config, fsync, cleaning ----------

    def delete_records_before(self, offset: int) -> int:
        """Kafka's deleteRecordsOnLeader: the log start moves to `offset` (-1: the HW), never past the
        HW, never back; returns it. Raises NotLeader, RecordsNotDeletable, DeleteOffsetOutOfRange."""
        self._check_leader()
        if not retention_deletes(self.config.cleanup_policy):  # Kafka's LogConfig.delete
            raise RecordsNotDeletable(f"Records of {self.topic}-{self.index} can not be deleted: cleanup.policy")
        target = self.high_watermark if offset == DELETE_TO_HIGH_WATERMARK else offset
        if not 0 <= target <= self.high_watermark:
            raise DeleteOffsetOutOfRange(f"{target} is outside [0, high watermark {self.high_watermark}]")
        if target > self._log.log_start_offset:
            self._log.delete_records_before(target)
            log.info("deleted records of %s-%d before %d", self.topic, self.index, target)
        return self._log.log_start_offset

    def enforce_retention(self, now_ms: int) -> int:
        """retention.ms / retention.bytes / segment.ms roll; returns the bytes deleted."""
        return self._log.enforce_retention(now_ms)

    def update_config(self, config: LogConfig, min_insync_replicas: int) -> None:
        """Retention, roll, cleanup policy and flush apply at the log's next check,
        min.insync.replicas at the next produce."""
        self.config = config
        self._log.update_config(config)
        self.min_insync_replicas = min_insync_replicas

    @property
    def flush_group(self) -> FlushGroup:
        """The files this partition's records share with others' (group_commit.py)."""
        return self._log.flush_group

    @staticmethod
    def flush_together(group: FlushGroup, partitions: list[Partition]) -> None:
        """fsync what these partitions of one flush group appended, with one fsync of the files
        they share; safe in a worker thread while the loop appends. While a move commits, the
        future log too: an fsync-acknowledged record is in both."""
        ReplicaLog.flush_together(group, [p._replica_log for p in partitions])

    def log_for_cleaning(self) -> PartitionLog:
        """For the log cleaner service alone: compaction rewrites the engine's own files."""
        return self._log

    # ----- leader: producers' appends ------------------------------------------------

    @property
    def wants_record_keys(self) -> bool:
        """The log indexes keys: the produce path's record check should collect them."""
        return self._log.indexes_keys

    def needs_verification(self, header: BatchHeader) -> bool:
        """A transactional batch that would open its producer's transaction here: the leader
        checks with the coordinator first (txn_verification.py)."""
        return self._replica_log.needs_verification(header)

    def in_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """The producer has a transaction open here at this epoch (producer_state.py)."""
        return self.producers.in_transaction(producer_id, producer_epoch)

    def start_verification(self, producer_id: int) -> VerificationGuard:
        return self._replica_log.verifications.start(producer_id)

    def append_as_leader(self, batch: bytearray, header: BatchHeader, acks: int,
                         walked: RecordSummary | None = None, coordinator: bool = False,
                         verified: VerificationGuard | None = None) -> tuple[AppendInfo, bool]:
        """Append a validated producer batch; returns (info, was_duplicate). `walked`: what the
        produce path's record check found (its keys, for a log that indexes them, and what the
        topic's record rules need), None for a batch of the broker's own: walked here. `coordinator`: the group
        coordinator's batch for a producer (TxnOffsetCommit), whose epoch alone is checked.
        `verified`: the guard of the coordinator's check of a transaction's first batch; the
        batch is refused unless it still holds (none given: not checked).

        Raises NotLeader, NotEnoughReplicas (acks=all with fewer than min.insync.replicas in
        the ISR: nothing is appended), RecordsRejected (a record the topic's configs refuse,
        record_checks.py), ProducerFenced / OutOfOrderSequence before writing,
        InvalidTxnState, or a StorageError from the log."""
        self._check_leader()
        self.isr_maintenance.check_enough_replicas(acks)
        check_records(batch, header, self.config, f"{self.topic}-{self.index}", now_ms(), walked)
        return self._replica_log.append_as_leader(batch, header, self.state.leader_epoch,
                                                  walked.keys if walked is not None else None, coordinator, verified)

    def append_txn_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                          commit: bool, acks: int = -1) -> AppendInfo:
        """WriteTxnMarkers' append, acks=all as Kafka's coordinator writes it; raises NotLeader,
        NotEnoughReplicas (nothing appended: the coordinator retries, rather than a marker per
        retry piling up), ProducerFenced, CoordinatorFenced, StorageError."""
        self._check_leader()
        self.isr_maintenance.check_enough_replicas(acks)
        return self._replica_log.append_txn_marker(producer_id, producer_epoch, coordinator_epoch, commit,
                                                   self.state.leader_epoch)

    def publish(self, upto: int | None = None) -> None:
        """Count appended data as the leader's (to the log end, or to `upto`, the end an
        fsync covered), move the HW and wake whoever waits on it."""
        if self.leader is None:
            return
        end = self._log.log_end_offset
        if upto is not None:
            self._fsynced.covered(upto, end)
        self.leader.leader_appended(end if upto is None else min(upto, end))
        self._high_watermark_maybe_moved()

    # ----- fsync before counting (flush.messages=1) ------------------------------------

    def fsync_due(self, messages: int) -> bool:
        """flush.messages: count `messages` just appended; True when they bring the partition to
        it, so they must be fsynced before they count (fsynced_end.py)."""
        return self._fsynced.fsync_due(messages, self.config.flush_messages)

    @property
    def fsync_before_report(self) -> bool:
        """Whether an offset of this replica counts only once fsynced (flush.messages=1)."""
        return self.config.flush_messages == 1

    @property
    def flushed_end(self) -> int:
        return self._fsynced.end

    @property
    def generation(self) -> int:
        """Bumped by every truncation: read before an fsync starts, hand it to `flushed`."""
        return self._fsynced.generation

    def flushed(self, upto: int, generation: int) -> None:
        self._fsynced.flushed(upto, generation, self._log.log_end_offset)

    # ----- leader: followers' fetches, the ISR and acks=all (isr_maintenance.py) ----------

    def follower_fetched(self, replica_id: int, fetch_offset: int) -> None:
        self.isr_maintenance.follower_fetched(replica_id, fetch_offset)

    def shrink_isr_if_lagging(self) -> None:
        self.isr_maintenance.shrink_if_lagging()

    async def wait_for_replication(self, required_offset: int, timeout_s: float) -> ErrorCode:
        return await self.isr_maintenance.wait_for_replication(required_offset, timeout_s)

    def isr_accepted(self, state: PartitionState) -> None:
        """The controller store took an ISR change this leader proposed."""
        if self.leader is not None and state.leader_epoch == self.state.leader_epoch:
            self.state = state
            self.leader.set_isr(state.isr)
            self._high_watermark_maybe_moved()

    def _high_watermark_maybe_moved(self) -> None:
        self.purgatory.high_watermark_moved(self.high_watermark)
        self.purgatory.data_arrived()

    # ----- follower (the fetcher's FollowerPartition) ------------------------------

    def latest_epoch(self) -> int:
        return self._log.latest_epoch()

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        return self._log.end_offset_for(epoch)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """The leader's log starts past our end (records deleted while we were away)."""
        self._replica_log.truncate_fully_and_start_at(offset)
        self._fsynced.emptied_at(offset)
        self._follower_hw = offset

    def append_as_follower(self, batch: bytes | memoryview) -> None:
        """One whole batch exactly as the leader stored it (the fetcher's append)."""
        self._replica_log.append_as_follower(batch)
        self.purgatory.data_arrived()

    def update_follower_high_watermark(self, high_watermark: int) -> None:
        hw = min(high_watermark, self._log.log_end_offset)
        if hw > self._follower_hw:
            self._follower_hw = hw
            self.purgatory.data_arrived()

    def restore_high_watermark(self, offset: int) -> None:
        """Start from a HW this partition had before a restart (the replication-offset
        checkpoint), clamped to the log as recovered; a leader's own HW is left alone."""
        if self.leader is None:
            clamped = min(max(offset, self._log.log_start_offset), self._log.log_end_offset)
            self._follower_hw = max(self._follower_hw, clamped)

    def truncate_to(self, offset: int) -> None:
        """Cut a divergent tail (a follower after OffsetForLeaderEpoch)."""
        self._replica_log.truncate_to(offset)
        self._fsynced.truncated(self._log.log_end_offset)
        self._follower_hw = min(self._follower_hw, self._log.log_end_offset)

    # ----- role changes (from metadata) -------------------------------------------------

    def make_leader(self, state: PartitionState) -> None:
        """Become (or stay) leader of `state.leader_epoch`: Kafka's makeLeader."""
        was_leader_of = self.state.leader_epoch if self.leader is not None else None
        hw = self.high_watermark
        self.state = state
        if was_leader_of == state.leader_epoch and set(self.leader.replicas) == set(state.replicas):
            self.leader.set_isr(state.isr)  # only the ISR changed
            self._high_watermark_maybe_moved()
            return
        leo = self._log.log_end_offset
        # Kafka's maybeAssignEpochStartOffset: the new epoch starts at our LEO even before its
        # first batch, so OffsetForLeaderEpoch answers for it at once.
        self._log.epochs.assign_if_newer(state.leader_epoch, leo)
        counted = self._fsynced.counted_end(hw, leo) if self.fsync_before_report else leo
        self.leader = LeaderState(self.node_id, list(state.replicas), list(state.isr), counted, hw,
                                  now_ms, self.lag_time_max_ms, epoch_start_offset=leo)
        self._high_watermark_maybe_moved()

    def make_follower(self, state: PartitionState) -> None:
        """Follow `state.leader` in `state.leader_epoch`: Kafka's makeFollower. Parked
        acks=all produces fail with NOT_LEADER_OR_FOLLOWER (their records may survive, but
        this broker can no longer say)."""
        if self.leader is not None:
            self._follower_hw = min(self.leader.high_watermark, self._log.log_end_offset)
        self.leader = None
        self.state = state
        self._replica_log.forget_verifications()  # a leader's alone; the next leader verifies anew
        self.purgatory.fail_produce_waiters(NotLeader(f"{self.topic}-{self.index} is led by {state.leader}"))
        self.purgatory.data_arrived()

    # ----- fetch long-poll ------------------------------------------------------------

    def add_waiter(self, fut: asyncio.Future, reads_to_log_end: bool = False) -> None:
        self.purgatory.add_data_waiter(fut, reads_to_log_end)

    def discard_waiter(self, fut: asyncio.Future) -> None:
        self.purgatory.discard_data_waiter(fut)

    def wake_all(self) -> None:
        self.purgatory.data_arrived()

