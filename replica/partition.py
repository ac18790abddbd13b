"""Kafka's Partition: one partition's log and every replication decision about it.

A partition is either the leader (it appends producers' batches, stamps its leader epoch,
tracks each follower's LEO from its fetches, moves the high watermark, parks acks=all
produces until the HW passes them, proposes ISR changes) or a follower (it appends the
leader's batches exactly as the leader stored them and takes the HW the leader sends).
Handlers call these entry points and never touch the log.

A single broker leads every partition with itself as the only replica and ISR, so the HW
follows what the leader counts as written: the log end, or with flush.messages=1 the end
an fsync covered (`publish(upto)`), so a consumer never reads what a crash could take back.

With flush.messages=1 a replica's offsets count only what it has fsynced (`flushed_end`), in
both roles: a follower reports a fetch offset only once an fsync covers it (the fetcher syncs
first), and a leader counts as its own LEO only what an fsync covered, also right after it
takes over from a follower's log whose tail was not fsynced yet. So the HW, min LEO over the
ISR, counts only what every ISR member has on disk, and acks=all survives a power cut that
takes every replica at once (Kafka's ISR counts page cache; KIP-966 is about that gap).

Leadership comes from metadata (`make_leader` / `make_follower`, called by the replica
manager with the state the controller store holds); epochs fence the rest: a request naming
an older leader epoch gets FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from segment.log import AppendInfo, LogConfig, PartitionLog
from segment.compaction.cleaning_policy import compacts
from wire.record_batch import BatchHeader, parse_header
from wire.records import InvalidRecords, iter_records

from .leader_state import LeaderState
from .producer_state import ProducerStateTable
from .purgatory import PartitionPurgatory


def now_ms() -> int:
    return int(time.time() * 1000)


class PartitionError(Exception):
    """Carries the Kafka error name the handler answers with."""

    code = "unknown_server_error"


class KeylessRecordOnCompactedTopic(PartitionError):
    """A compacted log keeps the latest record per key; a record without one has no place in it."""

    code = "invalid_record"


class NotLeader(PartitionError):
    code = "not_leader_or_follower"


class NotEnoughReplicas(PartitionError):
    code = "not_enough_replicas"


class NotEnoughReplicasAfterAppend(PartitionError):
    code = "not_enough_replicas_after_append"


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What the controller store says about a partition (Kafka's LeaderAndIsr)."""

    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


ISR_RETRY_BACKOFF_S = 0.5  # after a refused ISR change, as Kafka waits for new metadata

IsrProposer = Callable[["Partition", list[int]], Awaitable[PartitionState | None]]


class Partition:
    def __init__(self, topic: str, index: int, log: PartitionLog, node_id: int, config: LogConfig,
                 min_insync_replicas: int, lag_time_max_ms: int, lead_alone: bool = True) -> None:
        """`min_insync_replicas`, `lag_time_max_ms`: the broker's settings, whose defaults live in
        its settings table only. `lead_alone`: a single broker leads at once; a cluster member
        waits for make_leader or make_follower (the controller store's state), serving nothing
        until then."""
        self.topic = topic
        self.index = index
        self.log = log
        self.config = config
        self.node_id = node_id
        self.min_insync_replicas = min_insync_replicas
        self.lag_time_max_ms = lag_time_max_ms
        self.state = PartitionState(node_id if lead_alone else -1, 0, 0, (node_id,), (node_id,))
        self.leader: LeaderState | None = LeaderState(
            node_id, [node_id], [node_id], log.log_end_offset, log.log_end_offset, now_ms, lag_time_max_ms
        ) if lead_alone else None
        self._follower_hw = 0
        # Below it the log is known to be fsynced. At open nothing is known: a process crash
        # leaves unfsynced bytes in the page cache, and recovery cannot tell them apart.
        self._flushed_end = log.log_start_offset
        self._generation = 0  # bumped by each truncation: an fsync begun before one covers nothing
        self.producers = ProducerStateTable()
        self.purgatory = PartitionPurgatory()
        self.propose_isr: IsrProposer | None = None  # set in a cluster: AlterPartition through etcd
        self._isr_change: asyncio.Task | None = None
        self._next_proposal_at = 0.0
        self._rebuild_producer_state()

    def _rebuild_producer_state(self) -> None:
        self.producers = ProducerStateTable()
        for header in self.log.batch_headers(self.log.log_start_offset):
            self.producers.record(header, header.base_offset, header.last_offset, header.max_timestamp)

    # ----- what handlers read -----------------------------------------------------

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
    def isr(self) -> tuple[int, ...]:
        return tuple(sorted(self.leader.isr)) if self.leader is not None else self.state.isr

    def epoch_error(self, current_leader_epoch: int) -> str | None:
        """Kafka's check of a client's current_leader_epoch (-1: the client does not say)."""
        if current_leader_epoch > self.state.leader_epoch:
            return "unknown_leader_epoch"
        if 0 <= current_leader_epoch < self.state.leader_epoch:
            return "fenced_leader_epoch"
        return None

    # ----- leader: producers' appends ------------------------------------------------

    @property
    def wants_record_keys(self) -> bool:
        """The log indexes keys: the produce path's record check should collect them."""
        return self.log.indexes_keys

    def append_as_leader(self, batch: bytearray, header: BatchHeader, acks: int,
                         record_keys: set[bytes] | None = None) -> tuple[AppendInfo, bool]:
        """Append a validated producer batch; returns (info, was_duplicate). `record_keys`:
        its keys, collected by the record check, for a log that indexes them.

        Raises NotLeader, NotEnoughReplicas (acks=all with fewer than min.insync.replicas in
        the ISR: nothing is appended), ProducerFenced / OutOfOrderSequence before writing, or
        a StorageError from the log."""
        if self.leader is None:
            raise NotLeader(f"{self.node_id} is not the leader of {self.topic}-{self.index}")
        if acks == -1 and len(self.leader.isr) < self.min_insync_replicas:
            raise NotEnoughReplicas(
                f"The size of the current ISR {sorted(self.leader.isr)} is insufficient to satisfy the "
                f"min.isr requirement of {self.min_insync_replicas} for partition {self.topic}-{self.index}")
        if compacts(self.config.cleanup_policy) and _has_keyless_record(batch):
            raise KeylessRecordOnCompactedTopic(  # Kafka's LogValidator message
                f"Compacted topic cannot accept message without key in topic partition {self.topic}-{self.index}.")
        duplicate = self.producers.check(header)
        if duplicate is not None:
            info = AppendInfo(duplicate.first_offset, duplicate.last_offset, duplicate.timestamp, -1,
                              self.log.log_start_offset)
            return info, True
        info = self.log.append(batch, self.state.leader_epoch, now_ms(), record_keys)
        self.producers.record(header, info.first_offset, info.last_offset, info.max_timestamp)
        return info, False

    def publish(self, upto: int | None = None) -> None:
        """Count appended data as the leader's (to the log end, or to `upto`, the end an
        fsync covered), move the HW and wake whoever waits on it."""
        if self.leader is None:
            return
        end = self.log.log_end_offset
        if upto is not None:
            self._flushed_end = max(self._flushed_end, min(upto, end))
        self.leader.leader_appended(end if upto is None else min(upto, end))
        self._high_watermark_maybe_moved()

    # ----- fsync before counting (flush.messages=1) ------------------------------------

    @property
    def fsync_before_report(self) -> bool:
        """Whether an offset of this replica counts only once fsynced (flush.messages=1)."""
        return self.config.flush_messages == 1

    @property
    def flushed_end(self) -> int:
        return self._flushed_end

    @property
    def generation(self) -> int:
        """Bumped by every truncation: read before an fsync starts, hand it to `flushed`."""
        return self._generation

    def flushed(self, upto: int, generation: int) -> None:
        """An fsync that started in `generation` covered the log below `upto`. If the log was
        truncated meanwhile, the offsets it covered may hold other bytes now: it counts nothing."""
        if generation == self._generation:
            self._flushed_end = max(self._flushed_end, min(upto, self.log.log_end_offset))

    async def wait_for_replication(self, required_offset: int, timeout_s: float) -> str:
        """acks=all: wait until the HW reaches `required_offset` (the batch's last offset + 1);
        returns a Kafka error name ("none" when acknowledged)."""
        if self.leader is None:
            return NotLeader.code
        fut = self.purgatory.wait_for_high_watermark(required_offset, self.leader.high_watermark)
        try:
            await asyncio.wait((fut,), timeout=timeout_s)  # not wait_for: see broker/handlers/fetch.py
        finally:
            fut.cancel()
        if fut.cancelled():
            return "request_timed_out"
        if fut.exception() is not None:
            exc = fut.exception()
            return exc.code if isinstance(exc, PartitionError) else "unknown_server_error"
        if self.leader is None:
            return NotLeader.code
        if len(self.leader.isr) < self.min_insync_replicas:
            return NotEnoughReplicasAfterAppend.code
        return "none"

    # ----- leader: followers' fetches -------------------------------------------------

    def follower_fetched(self, replica_id: int, fetch_offset: int) -> None:
        """A follower's Fetch at fetch_offset: it holds everything below it."""
        if self.leader is None:
            return
        before = self.leader.high_watermark
        self.leader.follower_fetched(replica_id, fetch_offset)
        if self.leader.high_watermark != before:
            # Only a moved HW wakes anyone: waking every parked fetch on each follower fetch
            # made two followers' long-polls wake each other in a loop (66% of a core per
            # broker with an idle 50-partition RF=3 topic).
            self._high_watermark_maybe_moved()
        if self.leader.may_join(replica_id):
            self._change_isr(sorted(self.leader.isr | {replica_id}))

    def shrink_isr_if_lagging(self) -> None:
        """Called periodically (every lag time / 2, as Kafka's isr-expiration task)."""
        if self.leader is None:
            return
        lagging = self.leader.lagging()
        if lagging:
            self._change_isr(sorted(self.leader.isr - lagging))

    def _change_isr(self, new_isr: list[int]) -> None:
        if self.propose_isr is None or (self._isr_change is not None and not self._isr_change.done()):
            return  # one proposal at a time, as Kafka's pending AlterPartition
        if time.monotonic() < self._next_proposal_at:
            return  # the last one was refused: the metadata it lacked may still be on its way
        self._isr_change = asyncio.ensure_future(self._propose(new_isr))

    async def _propose(self, new_isr: list[int]) -> None:
        state = await self.propose_isr(self, new_isr)
        if state is None:
            self._next_proposal_at = time.monotonic() + ISR_RETRY_BACKOFF_S
            return
        if self.leader is not None and state.leader_epoch == self.state.leader_epoch:
            self.state = state
            self.leader.set_isr(state.isr)
            self._high_watermark_maybe_moved()

    def _high_watermark_maybe_moved(self) -> None:
        self.purgatory.high_watermark_moved(self.high_watermark)
        self.purgatory.data_arrived()

    # ----- follower (the fetcher's FollowerPartition) ------------------------------

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def latest_epoch(self) -> int:
        return self.log.latest_epoch()

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        return self.log.end_offset_for(epoch)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """The leader's log starts past our end (records deleted while we were away)."""
        self.log.truncate_fully_and_start_at(offset)
        self._generation += 1
        self._flushed_end = offset  # an empty log: the engines make the new start durable
        self._follower_hw = offset
        self._rebuild_producer_state()

    def append_as_follower(self, batch: bytes) -> None:
        """One whole batch exactly as the leader stored it (the fetcher's append)."""
        info = self.log.append_as_follower(batch)
        header = parse_header(batch)
        self.producers.record(header, info.first_offset, info.last_offset, info.max_timestamp)
        self.purgatory.data_arrived()

    def update_follower_high_watermark(self, high_watermark: int) -> None:
        hw = min(high_watermark, self.log.log_end_offset)
        if hw > self._follower_hw:
            self._follower_hw = hw
            self.purgatory.data_arrived()

    def restore_high_watermark(self, offset: int) -> None:
        """Start from a HW this partition had before a restart (the replication-offset
        checkpoint), clamped to the log as recovered; a leader's own HW is left alone."""
        if self.leader is None:
            clamped = min(max(offset, self.log.log_start_offset), self.log.log_end_offset)
            self._follower_hw = max(self._follower_hw, clamped)

    def truncate_to(self, offset: int) -> None:
        """Cut a divergent tail (a follower after OffsetForLeaderEpoch)."""
        self.log.truncate_to(offset)
        self._generation += 1
        self._flushed_end = min(self._flushed_end, self.log.log_end_offset)
        self._follower_hw = min(self._follower_hw, self.log.log_end_offset)
        self._rebuild_producer_state()

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
        leo = self.log.log_end_offset
        # Kafka's maybeAssignEpochStartOffset: the new epoch starts at our LEO even before its
        # first batch, so OffsetForLeaderEpoch answers for it at once.
        self.log.epochs.assign_if_newer(state.leader_epoch, leo)
        self.leader = LeaderState(self.node_id, list(state.replicas), list(state.isr), self._counted_end(hw), hw,
                                  now_ms, self.lag_time_max_ms, epoch_start_offset=leo)
        self._high_watermark_maybe_moved()

    def _counted_end(self, hw: int) -> int:
        """The LEO a new leader counts as its own: with fsync before counting, what is fsynced
        (the tail above it counts once the replica manager's fsync covers it, `publish`), but
        never less than the HW it had, which every ISR member reported fsynced."""
        leo = self.log.log_end_offset
        if not self.fsync_before_report:
            return leo
        return max(min(self._flushed_end, leo), min(hw, leo))

    def make_follower(self, state: PartitionState) -> None:
        """Follow `state.leader` in `state.leader_epoch`: Kafka's makeFollower. Parked
        acks=all produces fail with NOT_LEADER_OR_FOLLOWER (their records may survive, but
        this broker can no longer say)."""
        if self.leader is not None:
            self._follower_hw = min(self.leader.high_watermark, self.log.log_end_offset)
        self.leader = None
        self.state = state
        self.purgatory.fail_produce_waiters(NotLeader(f"{self.topic}-{self.index} is led by {state.leader}"))
        self.purgatory.data_arrived()

    # ----- fetch long-poll ------------------------------------------------------------

    def add_waiter(self, fut: asyncio.Future) -> None:
        self.purgatory.add_data_waiter(fut)

    def discard_waiter(self, fut: asyncio.Future) -> None:
        self.purgatory.discard_data_waiter(fut)

    def wake_all(self) -> None:
        self.purgatory.data_arrived()


def _has_keyless_record(batch) -> bool:
    """Whether a record of the batch has a null key (records that cannot be read count as such:
    the batch is refused either way)."""
    try:
        return any(record.key is None for record in iter_records(batch))
    except InvalidRecords:
        return True
