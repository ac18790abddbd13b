"""A partition's log as Kafka lays it out: `<topic>-<partition>/` holding segments.

    <topic>-<partition>/
        00000000000000000000.log  .index  .timeindex  .txnindex
        00000000000000041230.log  .index  .timeindex   <- active segment (appends)
        leader-epoch-checkpoint                        <- segment/leader_epoch_cache.py

A `.txnindex` (segment/txn_index.py) exists for a segment holding an ABORT marker.

A segment is named by the offset of its first batch. A new one is rolled when
the next batch would push the active one past segment.bytes, or when the
active one is older than segment.ms. Retention deletes whole segments from the
oldest end (by retention.ms against each segment's largest timestamp, and by
retention.bytes against the total size); the log start offset then moves to
the next segment's base (or further, by DeleteRecords).

Crash behaviour: opening the log trusts what the recovery point covers and cuts a torn tail
(log_loader.py). The leader-epoch cache is then checked against the batches left
(epoch_recovery.py), and the `.txnindex` entries of the scanned segments are rebuilt from the
log (txn_replay.py) if the scanned part holds a marker: that replay reads the headers from the
log start, as it needs the transactions open where the scan began. Only a directory this open
made itself (a new partition: mkdir succeeded) is taken as empty without being listed; one
already there, however it got there, is loaded and recovered as above.
truncate_fully_and_start_at leaves one empty segment named by the new start, made
durable with a directory fsync, and writes the store's checkpoints at once: a log
start lowered below the checkpointed one is in no file name.

Segment files are opened when used and closed when idle under the store's bound on open
files (segment/open_files.py); sealed segments' files close first. A fetch response holds the
descriptor of each region it sends, so a deleted or evicted segment's file stays readable
until the response is out, and a deleted segment's files go at once.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from bisect import bisect_right
from pathlib import Path
from typing import Callable

from segment.epoch_recovery import recover_epoch_cache
from segment.file_io import fsync_dir
from segment.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT, LeaderEpochCache, write_epochs_if_changed
from segment.log import FileRegion, FlushGroup, LogConfig, LogOffline, OffsetOutOfRange, PartitionLog, WriteRefused
from segment.txn_index import AbortedTxn
from wire import records as wire_records
from wire.record_batch import BatchHeader

from segment.compaction.cleaning_policy import retention_deletes

from .aborted_txns import collect_aborted, rebuild_txn_indexes
from .log_loader import load_segments
from .log_segment import LogSegment
from segment.open_files import OpenFiles

log = logging.getLogger(__name__)


class SegmentPartitionLog(PartitionLog):
    def __init__(self, directory: Path, config: LogConfig, recovery_point: int, log_start_offset: int, clean: bool,
                 write_checkpoints: Callable[[], None], files: OpenFiles) -> None:
        self.dir = Path(directory)
        self._files = files  # the store's bound on open segment files
        self._write_checkpoints = write_checkpoints  # the store's recovery-point and log-start files
        try:
            self.dir.mkdir(parents=True)
            self.made_empty = True  # nothing in it to list, read or recover: one empty segment
        except FileExistsError:
            self.made_empty = False
        self.config = config
        self._lock = threading.Lock()  # guards the segment list against flush() in a worker thread
        self.offline: str | None = None  # why the log stopped serving (LogOffline), until restart
        if self.made_empty:
            self.segments, scanned = [self._new_segment(0, _now_ms(), made_empty=True)], []
        else:
            self.segments, scanned = load_segments(self.dir, recovery_point, clean, _now_ms(), self._new_segment)
        first = self.segments[0].base_offset
        self._log_start = max(log_start_offset, first)
        if self._log_start > self.log_end_offset:
            self._log_start = self.log_end_offset
        self.recovery_point = min(max(recovery_point, 0), self.log_end_offset) if clean else self.log_end_offset
        self._log_synced = self.recovery_point  # the `.log` data fsynced below it (sync_log)
        self._roll_jitter_ms = self.config.random_segment_jitter()
        self.epochs = LeaderEpochCache(self.dir / LEADER_EPOCH_CHECKPOINT, missing=self.made_empty)
        recover_epoch_cache(self.epochs, self)
        rebuild_txn_indexes(self, scanned)

    # ----- opening ---------------------------------------------------------

    def _new_segment(self, base_offset: int, now_ms: int, made_empty: bool = False) -> LogSegment:
        return LogSegment(self.dir, base_offset, self.config.index_interval_bytes, now_ms, self._files, made_empty)

    # ----- interface -------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def state_dir(self) -> Path:
        return self.dir

    @property
    def active(self) -> LogSegment:
        return self.segments[-1]

    def _write(self, batch, header: BatchHeader, now_ms: int, record_keys: set[bytes] | None) -> None:
        active = self.active
        if active.size and (
            active.size + len(batch) > self.config.segment_bytes
            or now_ms - (active.first_batch_timestamp or active.created_ms) >= self.config.segment_ms - self._roll_jitter_ms
            or active.next_offset - active.base_offset + header.last_offset_delta >= 2**31 - 1
        ):
            active = self._roll(now_ms)
        active.append(batch, header)

    def _roll(self, now_ms: int) -> LogSegment:
        self._roll_jitter_ms = self.config.random_segment_jitter()
        seg = self._new_segment(self.log_end_offset, now_ms)
        seg.next_offset = seg.base_offset
        with self._lock:
            self.active.seal()
            self.segments.append(seg)
        return seg

    def _segment_index_for(self, offset: int) -> int:
        return max(bisect_right([s.base_offset for s in self.segments], offset) - 1, 0)

    def _segment_holding(self, offset: int) -> LogSegment:
        return self.segments[self._segment_index_for(offset)]

    # ----- aborted transactions ----------------------------------------------------

    def append_aborted_txn(self, txn: AbortedTxn) -> None:
        self._check_online()
        seg = self._segment_holding(txn.last_offset)
        try:
            seg.txn_index.append(txn)
        except (WriteRefused, OSError) as exc:
            self.offline = f"indexing the aborted transaction ending at {txn.last_offset} failed: {exc}"
            log.error("%s: log offline until restart: %s", self.dir.name, self.offline)
            raise LogOffline(self.offline) from exc

    def aborted_txns(self, start: int, upper: int) -> list[AbortedTxn]:
        return collect_aborted(list(self.segments), max(start, self._log_start), upper)  # list: the cleaner's thread

    def read(self, offset: int, max_bytes: int, upper_bound: int) -> list[FileRegion | bytes]:
        self._check_online()
        if offset < self._log_start or offset > self.log_end_offset:
            raise OffsetOutOfRange(f"offset {offset} outside [{self._log_start}, {self.log_end_offset}]")
        regions: list[FileRegion | bytes] = []  # bytes: small reads (LogSegment.region)
        total = 0
        i = self._segment_index_for(offset)
        while i < len(self.segments) and offset < upper_bound:
            seg = self.segments[i]
            found = seg.position_of(offset)
            if found is not None:
                start, first = found
                if first.last_offset >= upper_bound:
                    break
                end = seg.end_of_whole_batches(start, start + max_bytes - total, upper_bound)
                if end == start and not total:
                    end = start + first.size  # the answer's first batch goes whole even when larger
                if end > start:
                    regions.append(seg.region(start, end - start))
                    total += end - start
                if end < seg.size or total >= max_bytes:
                    break
                offset = seg.next_offset
            i += 1
            if i < len(self.segments):
                offset = max(offset, self.segments[i].base_offset)
        return regions

    def read_bytes(self, region: FileRegion | bytes) -> bytes:
        if isinstance(region, bytes):
            return region
        return os.pread(region.fd, region.size, region.position)  # region.holder keeps fd open

    def offset_for_timestamp(self, timestamp_ms: int):
        for seg in self.segments:
            if seg.max_timestamp < timestamp_ms:
                continue
            start = max(seg.time_index.first_at_or_after(timestamp_ms), self._log_start)
            found = seg.position_of(start)
            if found is None:
                continue
            for pos, header in seg.headers_from(found[0]):
                if header.max_timestamp >= timestamp_ms and header.last_offset >= self._log_start:
                    hit = wire_records.first_offset_at_or_after(seg.pread(header.size, pos), timestamp_ms,
                                                                self._log_start)
                    if hit is not None:
                        return hit
        return None

    def max_timestamp(self):
        best = None
        for seg in self.segments:
            if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best[1]):
                best = (seg, seg.max_timestamp)
        if best is None:
            return None
        seg, _ = best
        found = seg.position_of(seg.offset_of_max_timestamp)
        if found is None:
            return None
        pos, header = found
        return wire_records.offset_of_max_timestamp(seg.pread(header.size, pos))

    def batch_headers(self, from_offset: int = 0):
        for seg in list(self.segments):
            if seg.next_offset <= from_offset:
                continue
            found = seg.position_of(from_offset)
            if found is None:
                continue
            for _pos, header in seg.headers_from(found[0]):
                yield header

    def truncate_to(self, offset: int) -> None:
        before = self.log_end_offset
        with self._lock:
            while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
                self._retire(self.segments.pop())
            if self.segments[0].base_offset >= offset:
                self._retire(self.segments.pop())
                self.segments.append(self._new_segment(offset, _now_ms()))
            else:
                self.active.truncate_to(offset)
            self.active.seal(False)  # appends go to it again
        self._log_start = min(self._log_start, self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self._log_synced = min(self._log_synced, self.log_end_offset)
        end = min(offset, self.log_end_offset)
        if self.epochs.has_entries_from(end):
            if self.log_end_offset < before:
                # The cut is on disk before the cache file forgets its epochs, so no crash brings
                # back batches of an epoch the file no longer names.
                self.flush()
                fsync_dir(self.dir)
            self.epochs.truncate_from_end(end)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._check_online()
        with self._lock:
            while self.segments:
                self._retire(self.segments.pop())  # newest first: a crash midway leaves a prefix
            self.segments.append(self._new_segment(offset, _now_ms()))
        # The empty segment's name is the log's new start and end once the directory is durable;
        # the checkpoints cover a start below the one they hold, which no file name can lower.
        fsync_dir(self.dir)
        self._log_start = self.recovery_point = self._log_synced = offset
        self._write_checkpoints()
        self.epochs.replace([])

    def delete_records_before(self, offset: int) -> None:
        if offset > self.log_end_offset:
            raise OffsetOutOfRange(f"cannot delete before {offset}: log ends at {self.log_end_offset}")
        self._log_start = max(self._log_start, offset)
        self._drop_while(lambda seg, nxt: nxt is not None and nxt.base_offset <= self._log_start)
        self.epochs.truncate_from_start(self._log_start)

    def enforce_retention(self, now_ms: int) -> int:
        deleted = 0
        cfg = self.config
        if not retention_deletes(cfg.cleanup_policy):
            return 0  # cleanup.policy=compact: every key's latest record stays, however old
        if cfg.retention_ms >= 0:
            deleted += self._drop_while(
                # an empty segment (the cleaner's, at the log start) goes with the expired ones
                lambda seg, nxt: (seg.size == 0 and nxt is not None)
                or (seg.size > 0 and now_ms - seg.max_timestamp > cfg.retention_ms), now_ms
            )
        if cfg.retention_bytes >= 0:
            excess = [self.size_in_bytes - cfg.retention_bytes]

            def over(seg, nxt):
                if not seg.size:
                    return nxt is not None
                if seg.size and excess[0] - seg.size >= 0:
                    excess[0] -= seg.size
                    return True
                return False

            deleted += self._drop_while(over, now_ms)
        self.epochs.truncate_from_start(self._log_start)
        return deleted

    def _drop_while(self, predicate, now_ms: int | None = None) -> int:
        """Delete segments from the oldest while predicate(seg, next_seg) holds; roll the active first if needed."""
        deleted = 0
        while True:
            seg = self.segments[0]
            nxt = self.segments[1] if len(self.segments) > 1 else None
            if not predicate(seg, nxt):
                break
            if nxt is None:
                if now_ms is None or seg.size == 0:
                    break
                self._roll(now_ms)
                nxt = self.segments[1]
            with self._lock:
                self.segments.pop(0)
            self._retire(seg)
            deleted += seg.size
            self._log_start = max(self._log_start, nxt.base_offset)
        return deleted

    def _retire(self, seg: LogSegment) -> None:
        # No grace period (log.segment.delete.delay.ms) is needed for fetches in flight: each
        # region they send holds its file's descriptor (segment/open_files.py).
        seg.delete()

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    def flush(self) -> None:
        """fsync the segments past the recovery point. A failed fsync takes the log offline:
        the kernel may have dropped the dirty pages it could not write, so a second fsync
        would succeed without the data (PostgreSQL's "fsyncgate"); only a restart, which
        re-reads the files, knows what they hold."""
        self.recovery_point = max(self.recovery_point, self._sync(indexes=True))

    @property
    def flush_group(self) -> "SegmentPartitionLog":
        """A group of one: the log's own files."""
        return self

    def flush_logs(self, logs: list[PartitionLog]) -> None:
        """The acknowledgement's fsync (FlushGroup, a group of one): sync_log."""
        for plog in logs:
            assert isinstance(plog, SegmentPartitionLog)
            plog.sync_log()

    def sync_log(self) -> None:
        """fsync the `.log` data appended since the last sync, not the indexes, and leave the
        recovery point: what a flush.messages acknowledgement needs. The indexes and the
        `.txnindex` are derived from the log, and a recovery re-derives them past the recovery
        point, which only `flush` (flush.ms, close) moves, after fsyncing them too. The four
        files fsynced together for each acknowledgement held the fsync-before-ack cell's
        requests 1.8-2.4 ms on average in the broker, at 0.71-0.78 of its CPU; the `.log` alone
        1.5-1.7 ms, 0.63-0.68 (bench/fsync_before_ack.md)."""
        self._sync(indexes=False)

    def _sync(self, indexes: bool) -> int:
        """fsync each segment with offsets past the recovery point, all its files (`indexes`),
        or past the last sync of the `.log`, that file alone; and the active segment. Returns the
        log end they cover. Takes the log offline if an fsync fails."""
        self._check_online()
        write_epochs_if_changed(self.epochs)  # the file never lacks an epoch the log holds
        with self._lock:
            target = self.log_end_offset
            below = self.recovery_point if indexes else self._log_synced
            segments = [s for s in self.segments if s.next_offset > below or s is self.segments[-1]]
        for seg in segments:
            try:  # a segment deleted meanwhile has nothing to sync
                if indexes:
                    seg.flush()
                else:
                    seg.sync_log()
            except OSError as exc:
                self.offline = f"fsync of {seg.log_path} failed: {exc.strerror or exc}"
                log.error("%s: log offline until restart: %s", self.dir.name, self.offline)
                raise LogOffline(self.offline) from exc
        self._log_synced = max(self._log_synced, target)
        return target

    def _check_online(self) -> None:
        if self.offline is not None:
            raise LogOffline(f"{self.dir.name} is offline: {self.offline}")

    def close(self) -> None:
        if self.offline is None:
            try:
                self.flush()
            except LogOffline:
                pass  # logged by flush; the store leaves no clean-shutdown marker
        for seg in self.segments:
            seg.close()


def _now_ms() -> int:
    return int(time.time() * 1000)


FlushGroup.register(SegmentPartitionLog)  # flush_group is the log itself
