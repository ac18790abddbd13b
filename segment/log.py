"""The storage interface both engines implement, and nothing else leaks upward.

A `LogStore` (log_store.py) owns one engine's files under a data directory and hands
out one `PartitionLog` per (topic, partition). The broker only ever talks to these two
classes, so `segment/kafka` (per-partition segments) and `segment/rocket`
(shared commitlog) are interchangeable per topic.

Contract shared by both engines:
- `append` takes exactly one record batch v2 that the broker has already
  validated (CRC, magic, sizes), assigns offsets by rewriting baseOffset and
  partitionLeaderEpoch in the header (outside the CRC), and writes it. Record
  bytes are never re-encoded.
- `append_as_follower` takes one batch exactly as the leader stored it (offsets,
  epoch, timestamps) and writes its bytes unchanged; its base offset must be the
  log end offset.
  Both appends are written once, here; an engine supplies only its layout step
  (`_write`) and whether it still serves (`_check_online`).
- Every append records a batch's leader epoch in the partition's leader-epoch
  cache (leader_epoch_cache.py) before the batch is written; `truncate_to` cuts
  the cache with the log, moving the log start moves the cache's first entry, and
  `truncate_fully_and_start_at` empties both.
- `read` returns whole batches as file regions, starting at the batch that
  contains `offset`; the broker sends them with os.sendfile.
- Indexes are derived data; the log is the truth. Opening a log after an
  unclean stop truncates a torn tail to the last valid batch and rebuilds any
  index that is behind it, and checks the epoch cache against the batches
  (epoch_recovery.py).
- Aborted transactions are an index too (txn_index.py): the partition computes each entry
  (it knows the open transactions) and hands it over once the ABORT marker is appended;
  truncation, retention and DeleteRecords drop entries with their markers, and recovery
  cuts what the log lost and rebuilds what it re-read (txn_replay.py), so opening a log
  never scans it for them.
"""

from __future__ import annotations

import abc
import logging
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from wire.record_batch import (
    HEADER_SIZE, MAGIC, TIMESTAMP_TYPE_BIT, BatchHeader, InvalidBatch, assign_offsets, crc_matches, parse_header,
    set_log_append_time,
)

if TYPE_CHECKING:
    from segment.leader_epoch_cache import LeaderEpochCache
    from segment.txn_index import AbortedTxn

from .storage_errors import (  # noqa: F401  (the engines and the broker import them from here)
    LogClosed,
    LogOffline,
    OffsetMismatch,
    OffsetOutOfRange,
    StorageError,
    WriteRefused,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Per-topic settings, named after Kafka's topic configs. Plain values with no defaults: the
    broker fills them from its settings table (broker/settings/table.py), which holds each
    one's default and validator; a topic's overrides replace some of them."""

    segment_bytes: int  # segment.bytes
    segment_ms: int  # segment.ms
    segment_jitter_ms: int  # segment.jitter.ms: a segment rolls up to this much before segment.ms
    retention_ms: int  # retention.ms (-1: forever)
    retention_bytes: int  # retention.bytes (-1: unlimited)
    index_interval_bytes: int  # index.interval.bytes
    max_message_bytes: int  # max.message.bytes
    flush_messages: int  # flush.messages; 0: page cache only; 1: fsync before ack
    flush_ms: int  # flush.ms: fsync data older than this (-1: page cache only)
    message_timestamp_type: str  # message.timestamp.type: CreateTime or LogAppendTime
    # message.timestamp.before.max.ms / after.max.ms: how far a CreateTime record's timestamp
    # may lie before / after the broker's clock (replica/record_checks.py)
    message_timestamp_before_max_ms: int
    message_timestamp_after_max_ms: int
    # log.segment.delete.delay.ms: a deleted file's descriptor stays open this long, so a fetch
    # already holding a region of it can still be sent; its space returns only after it
    file_delete_delay_ms: int
    # Compaction (segment/compaction/cleaning_policy.py says what each one decides)
    cleanup_policy: str  # cleanup.policy: delete | compact | compact,delete
    min_cleanable_dirty_ratio: float  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int  # min.compaction.lag.ms
    max_compaction_lag_ms: int  # max.compaction.lag.ms
    delete_retention_ms: int  # delete.retention.ms: how long tombstones stay
    # compression.type: the codec the leader writes producers' batches in (wire/recompression.py);
    # "producer" keeps each batch's own. The levels are the topic's compression.*.level for it.
    compression_type: str
    compression_gzip_level: int
    compression_lz4_level: int
    compression_zstd_level: int

    def random_segment_jitter(self) -> int:
        """segment.jitter.ms drawn for one segment, as Kafka's LogConfig.randomSegmentJitter:
        partitions created together do not all roll (and fsync, and index) at once."""
        jitter = min(self.segment_jitter_ms, self.segment_ms)
        return random.randrange(jitter) if jitter > 0 else 0


@dataclass(frozen=True, slots=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int


@dataclass(frozen=True, slots=True)
class FileRegion:
    """`size` bytes of an open file starting at `position`.

    `fd` stays valid while the region lives when `holder` is set (the segment engine's file
    handle, which closes the descriptor only when no region refers to it); otherwise until
    the region's file is deleted, and a reader that finds it closed gets an OSError and
    answers the fetch with a retriable error.
    """

    fd: int
    position: int
    size: int
    holder: object = field(default=None, compare=False, repr=False)


class PartitionLog(abc.ABC):
    """One partition's ordered, offset-addressed sequence of record batches."""

    epochs: LeaderEpochCache  # set by each engine when it opens the log

    @property
    @abc.abstractmethod
    def log_start_offset(self) -> int: ...

    @property
    @abc.abstractmethod
    def log_end_offset(self) -> int:
        """Offset the next appended record gets (Kafka's LEO)."""

    @property
    @abc.abstractmethod
    def size_in_bytes(self) -> int: ...

    # True for a log that indexes its records' keys (the commitlog's IndexFile): the produce
    # path then hands it the keys its record check collected, so the batch is walked once.
    indexes_keys = False

    config: LogConfig  # set by each engine; update_config replaces it

    # True for a log its engine has just created in a directory it made itself (a new
    # partition): no file of the partition existed, so the replica layer lists and reads none
    # (producer snapshots, replica_log.py). An engine sets it when it opens the log.
    made_empty = False

    @property
    @abc.abstractmethod
    def state_dir(self) -> Path:
        """The partition's own directory, removed with it: where the replica layer keeps files
        it derives from the log (producer-state snapshots), which the engine leaves alone."""

    def append(self, batch: bytearray, leader_epoch: int, now_ms: int,
               record_keys: set[bytes] | None = None) -> AppendInfo:
        """Assign offsets to one validated batch (rewriting its header in place) and write it.
        `record_keys`: the batch's distinct keys when the caller already walked its records.
        Raises LogOffline before touching the batch, and what the write raises (nothing is
        stored then). `batch` must not change until the store's commit_writes."""
        self._check_online()
        base = self.log_end_offset
        assign_offsets(batch, base, leader_epoch)
        log_append_time = -1
        if self.config.message_timestamp_type == "LogAppendTime":
            set_log_append_time(batch, now_ms)
            log_append_time = now_ms
        header = parse_header(batch)
        self._write_with_epoch(batch, header, now_ms, record_keys)
        return AppendInfo(base, header.last_offset, header.max_timestamp, log_append_time, self.log_start_offset)

    def append_as_follower(self, batch) -> AppendInfo:
        """Write one record batch v2 exactly as the leader stored it: offsets, leader epoch and
        timestamps untouched, the bytes never rewritten. Raises InvalidBatch (CORRUPT_MESSAGE)
        for bytes that are not one whole batch with a valid CRC, OffsetMismatch when it does not
        continue the log, and what `append` raises for the write (nothing is stored then).
        As with `append`, `batch` must not change until the store's commit_writes."""
        self._check_online()
        header = _check_replicated(batch, self.log_end_offset, self.latest_epoch())
        self._write_with_epoch(batch, header, int(time.time() * 1000), None)
        log_append_time = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_BIT else -1
        return AppendInfo(header.base_offset, header.last_offset, header.max_timestamp, log_append_time,
                          self.log_start_offset)

    def _write_with_epoch(self, batch, header: BatchHeader, now_ms: int, record_keys: set[bytes] | None) -> None:
        """Record the batch's leader epoch in the cache, then write the batch; a failed write
        takes the epoch back out. The cache goes first so its file never lacks an epoch the
        log holds."""
        added = self.epochs.assign_if_newer(header.partition_leader_epoch, header.base_offset)
        try:
            self._write(batch, header, now_ms, record_keys)
        except BaseException:
            if added:
                self._forget_new_epoch(header.base_offset)
            raise

    @abc.abstractmethod
    def _write(self, batch, header: BatchHeader, now_ms: int, record_keys: set[bytes] | None) -> None:
        """Store one batch whose header is final, leader's or follower's: the engine's own
        layout step, all or nothing."""

    @abc.abstractmethod
    def _check_online(self) -> None:
        """Raise LogOffline if the log stopped serving (a failed fsync), until a restart."""

    def _forget_new_epoch(self, base_offset: int) -> None:
        """Undo the cache entry _write_with_epoch added for a batch whose write failed."""
        try:
            self.epochs.truncate_from_end(base_offset)
        except StorageError as exc:  # the cache is right; its file is trimmed at the next open
            log.warning("leader-epoch cache after a failed append: %s", exc)

    def latest_epoch(self) -> int:
        """The newest leader epoch with a batch in this log (-1 if none)."""
        return self.epochs.latest_epoch()

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest epoch <= `epoch`, where its batches end); see
        LeaderEpochCache.end_offset_for for every case, (-1, -1) when unknown."""
        return self.epochs.end_offset_for(epoch, self.log_end_offset)

    @abc.abstractmethod
    def read(self, offset: int, max_bytes: int, upper_bound: int) -> list[FileRegion]:
        """Whole batches from the one containing `offset`, ending before `upper_bound`.

        At least one whole batch is returned if one exists below upper_bound,
        even if it is larger than max_bytes (so a consumer always progresses).
        Raises OffsetOutOfRange if offset < log_start_offset or > log_end_offset.
        """

    @abc.abstractmethod
    def read_bytes(self, region: FileRegion) -> bytes:
        """The bytes of a region (for the few places that must look inside batches)."""

    @abc.abstractmethod
    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= timestamp_ms, or None."""

    @abc.abstractmethod
    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp, or None if empty."""

    @abc.abstractmethod
    def batch_headers(self, from_offset: int = 0) -> Iterator[BatchHeader]:
        """Headers of stored batches from the one containing from_offset (for rebuilding producer state)."""

    def batches_to_replay(self, from_offset: int) -> Iterator[tuple[BatchHeader, Callable[[], bytes]]]:
        """batch_headers, each with a call that reads its whole batch: a replay reads only the
        few it must look inside (markers)."""
        for header in self.batch_headers(from_offset):
            yield header, lambda h=header: self.read_bytes(self.read(h.base_offset, 1, h.last_offset + 1)[0])

    @abc.abstractmethod
    def append_aborted_txn(self, txn: AbortedTxn) -> None:
        """Index an aborted transaction whose ABORT marker, at txn.last_offset, was just appended
        (txn_index.py). A write that fails takes the log offline (LogOffline): the log would
        hold a marker its index lacks, and read_committed consumers would take the
        transaction's records for committed ones; the recovery at the restart indexes it."""

    @abc.abstractmethod
    def aborted_txns(self, start: int, upper: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [start, upper), in marker order: marker at or
        after `start` (and the log start), first offset before `upper` (Kafka's
        collectAbortedTransactions, what a read_committed fetch is told)."""

    @abc.abstractmethod
    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset at or after `offset` (follower truncation), and
        the epochs that started there; the log's cut is durable before the cache's."""

    @abc.abstractmethod
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and start it at `offset` (Kafka's truncateFullyAndStartAt): a follower
        whose end is below the leader's log start cannot continue its log. Afterwards
        log_start_offset == log_end_offset == `offset`, the next batch starts there and the
        leader-epoch cache is empty; a restart, clean or not, finds the log the same way."""

    @abc.abstractmethod
    def delete_records_before(self, offset: int) -> None:
        """Advance the log start offset (DeleteRecords); whole segments below it go, and the
        epoch cache's first entry moves to the new start."""

    @abc.abstractmethod
    def enforce_retention(self, now_ms: int) -> int:
        """Apply retention.ms / retention.bytes / segment.ms roll; return bytes deleted."""

    @abc.abstractmethod
    def update_config(self, config: LogConfig) -> None: ...

    @abc.abstractmethod
    def flush(self) -> None:
        """fsync everything appended so far and advance the recovery point."""

    @property
    @abc.abstractmethod
    def flush_group(self) -> "FlushGroup":
        """The files this log's records are in, shared with every log of the same group: one
        fsync of the group covers them all (the commitlog layout: the store's one commitlog;
        the segment layout: the log's own files, a group of one)."""

    @abc.abstractmethod
    def close(self) -> None: ...


class FlushGroup(abc.ABC):
    """Logs whose records share files (PartitionLog.flush_group), fsynced as one."""

    @abc.abstractmethod
    def flush_logs(self, logs: list[PartitionLog]) -> None:
        """In a worker thread: fsync what these logs (all of this group) have written, with as
        few fsyncs as the files allow; raises StorageError (the log or store goes offline)."""



def _check_replicated(batch, log_end_offset: int, latest_epoch: int) -> BatchHeader:
    if len(batch) < HEADER_SIZE:
        raise InvalidBatch(f"no whole record batch in {len(batch)} bytes")
    header = parse_header(batch)
    if header.magic != MAGIC or header.size != len(batch) or header.last_offset_delta < 0:
        raise InvalidBatch(f"not one whole record batch v2: magic {header.magic}, batchLength "
                           f"{header.batch_length} for {len(batch)} bytes, lastOffsetDelta {header.last_offset_delta}")
    if header.base_offset != log_end_offset:
        raise OffsetMismatch(f"batch at {header.base_offset} does not start at the log end {log_end_offset}")
    if 0 <= header.partition_leader_epoch < latest_epoch:
        raise OffsetMismatch(f"batch at {header.base_offset} of leader epoch {header.partition_leader_epoch} "
                             f"after epoch {latest_epoch}: the log diverges, truncate first")
    if not crc_matches(batch, 0, len(batch)):
        raise InvalidBatch(f"CRC32C mismatch in the batch at {header.base_offset}")
    return header
