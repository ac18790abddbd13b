"""One partition's view of the shared commitlog: its consume queue plus a log start offset.

A partition owns no commitlog bytes of its own; everything it answers comes from
its consume queue (consume_queue.py) and regions of the commitlog files the
queue points at. Offsets [log_start_offset, log_end_offset) are readable.

Retention, per partition and per batch (not per segment as in Kafka):
- retention.ms: the log start offset moves past every batch, from the oldest,
  whose maxTimestamp is older than now - retention.ms;
- retention.bytes: it moves past the oldest batches while the batches left
  still hold at least retention.bytes;
- DeleteRecords moves it to any offset up to the log end.
The log start offset is what clients see, so it is exact whichever way it
moves. Bytes are freed later and coarsely: whole consume-queue files once they
are wholly below it, and whole commitlog files once every partition's log
start has passed them (store.py). segment.bytes and segment.ms do not apply:
the commitlog file size is a store setting.

The partition's leader-epoch cache is its own file beside its consume queue,
`consumequeue/<topic>/<partition>/leader-epoch-checkpoint` (leader_epoch_cache.py):
each partition replicates on its own, so its epochs are its own even though its
batches share the commitlog with every other partition. It is checked against the
queue's batches when the log is opened (epoch_recovery.py).

Aborted transactions (segment/txn_index.py) are indexed in the queue's `aborted.txnindex` and,
below C, in the compacted generation's own; the queue cuts its file with itself.

Compaction (cleanup.policy=compact, log_cleaner.py): offsets below the end C of the
partition's compacted generation (compacted_log.py) are served from that file, the rest
from the consume queue; every reader below walks both in offset order (`_entries_from`).
`changes` counts what moves the log under a cleaner round (retention, DeleteRecords,
truncation), so a round that raced one of them is rolled back at its swap.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from segment.compaction.cleaning_policy import retention_deletes
from segment.epoch_recovery import recover_epoch_cache
from segment.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT, LeaderEpochCache, write_epochs_if_changed
from segment.log import FileRegion, LogConfig, LogOffline, OffsetOutOfRange, PartitionLog, StorageError
from segment.open_files import OpenFiles
from segment.txn_index import AbortedTxn
from wire import records as wire_records
from wire.record_batch import HEADER_SIZE, BatchHeader, parse_header

from . import log_cleaner
from . import unit_format as uf
from .checkpoint import MeasuredSize
from .commitlog import CommitLog
from .compacted_log import CompactedEntry, CompactedLog
from .consume_queue import ConsumeQueue, QueueEntry

# A read walks one consume-queue entry per batch (a partition's batches are not adjacent in the
# commitlog), so its cost grows with the batch count, not the bytes: fetch.max.bytes of
# 140-byte batches is ~400,000 entries, seconds of event loop. A read stops after this many
# batches, as RocketMQ bounds a pull by message count; Kafka's clients take a shorter answer
# (Kafka's own reads stop at a segment's end) and fetch on from where it ended.
MAX_BATCHES_PER_READ = 2000


class QueueStore(Protocol):
    """What a partition's log uses of the store that owns every queue (store.py's
    RocketLogStore): declared here so this module does not import the store that imports it."""

    commitlog: CommitLog
    open_files: OpenFiles
    log_start: dict[tuple[str, int], int]
    compacted: dict[tuple[str, int], CompactedLog]
    offline: str | None

    index: object | None

    def append_batch(self, queue: ConsumeQueue, batch, header, now_ms: int,
                     record_keys: set[bytes] | None = None) -> None: ...
    def check_online(self) -> None: ...
    def checkpointed_size(self, key: tuple[str, int]) -> MeasuredSize | None: ...
    def go_offline(self, reason: str) -> LogOffline: ...
    def log_starts_moved(self) -> None: ...
    def flush_logs(self, logs: list[PartitionLog]) -> None: ...
    def persist_log_starts(self) -> None: ...
    def start_queue_at(self, queue: ConsumeQueue, offset: int) -> None: ...
    def truncate_queue(self, queue: ConsumeQueue, offset: int) -> bool: ...


class RocketPartitionLog(PartitionLog):
    def __init__(self, store: QueueStore, queue: ConsumeQueue, config: LogConfig, made_empty: bool = False) -> None:
        """`made_empty`: `queue` was just created in a directory it made (PartitionLog.made_empty)."""
        self.made_empty = made_empty
        self.store = store
        self.queue = queue
        self.topic, self.partition = queue.topic, queue.partition
        self.config = config
        self.header_size = uf.header_size_for(self.topic)
        self.changes = 0
        self._size = 0
        self.counted: MeasuredSize | None = None
        self._set_size(self._size_at_open())
        self.epochs = LeaderEpochCache(queue.dir / LEADER_EPOCH_CHECKPOINT, missing=made_empty)
        recover_epoch_cache(self.epochs, self)

    # ----- sizes and bounds ----------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self.store.log_start[(self.topic, self.partition)]

    def _set_log_start(self, offset: int) -> None:
        self.store.log_start[(self.topic, self.partition)] = offset

    @property
    def log_end_offset(self) -> int:
        return self.queue.end_offset

    @property
    def size_in_bytes(self) -> int:
        return self._size

    @property
    def state_dir(self) -> Path:
        return self.queue.dir

    def _batch_size(self, entry: QueueEntry | CompactedEntry) -> int:
        return entry.size if isinstance(entry, CompactedEntry) else entry.size - self.header_size

    @property
    def compacted(self) -> CompactedLog | None:
        return self.store.compacted.get((self.topic, self.partition))

    def _entries_from(self, offset: int):
        """Every batch holding an offset >= `offset`, in offset order: the compacted
        generation's below its end, then the consume queue's."""
        comp = self.compacted
        if comp is not None:
            if offset < comp.end:
                yield from comp.entries_from(offset)
            offset = max(offset, comp.end)
        i = self.queue.find(offset)
        if i is not None:
            yield from self.queue.entries_from(i)

    def _live_entries(self):
        return self._entries_from(self.log_start_offset)

    def _measure(self) -> int:
        return sum(self._batch_size(e) for e in self._live_entries())

    def _size_at_open(self) -> int:
        """The checkpoint's count of this log's bytes and the batches dispatched past it, when the
        count still describes the queue's entries (same log start, the batch it ended with still
        the queue's at the same commitlog position); else every live batch's size."""
        known = self.store.checkpointed_size((self.topic, self.partition))
        queue, end = self.queue, self.log_end_offset
        if (known is not None and self.compacted is None and known.log_start == self.log_start_offset
                and known.end <= end):
            if known.end == known.log_start:
                return known.size + sum(self._batch_size(e) for e in self._entries_from(known.end))
            i = queue.find(known.end - 1)
            if i is not None and queue.entry(i).phys == known.last_phys and queue.entry(i).last_offset == known.end - 1:
                return known.size + sum(self._batch_size(e) for e in self._entries_from(known.end))
        return self._measure()

    def _set_size(self, size: int) -> None:
        """Every change of the size, on the owner's thread: `counted` is read whole by the
        checkpoint's thread (one reference), so it never mixes two moments."""
        self._size = size
        last = self.queue.last
        self.counted = MeasuredSize(self.log_start_offset, self.log_end_offset, size,
                                    last.phys if last is not None else -1)

    # ----- appending -----------------------------------------------------------

    @property
    def indexes_keys(self) -> bool:
        return self.store.index is not None

    def _write(self, batch, header: BatchHeader, now_ms: int, record_keys: set[bytes] | None) -> None:
        self.store.append_batch(self.queue, batch, header, now_ms, record_keys)
        self._set_size(self._size + len(batch))

    def _check_online(self) -> None:
        self.store.check_online()

    # ----- reading -------------------------------------------------------------

    def _region(self, entry: QueueEntry | CompactedEntry) -> FileRegion:
        if isinstance(entry, CompactedEntry):  # the region holds the descriptor until sent
            handle = self.compacted.data.handle()
            return FileRegion(handle.fd, entry.position, entry.size, handle)
        f = self.store.commitlog.file_at(entry.phys)
        if f is None:
            raise OSError(f"commitlog file of offset {entry.phys} is gone")
        return FileRegion(f.fd, entry.phys - f.base + self.header_size, self._batch_size(entry))

    def read(self, offset: int, max_bytes: int, upper_bound: int) -> list[FileRegion]:
        self._check_online()
        start, end = self.log_start_offset, self.log_end_offset
        if offset < start or offset > end:
            raise OffsetOutOfRange(f"offset {offset} outside [{start}, {end}]")
        regions: list[FileRegion] = []
        total = 0
        for entry in self._entries_from(offset):
            if entry.last_offset >= upper_bound:
                break
            size = self._batch_size(entry)
            if regions and total + size > max_bytes:
                break
            regions.append(self._region(entry))  # batches of one partition are rarely adjacent
            total += size
            if total >= max_bytes or len(regions) >= MAX_BATCHES_PER_READ:
                break
        return regions

    def read_bytes(self, region: FileRegion) -> bytes:
        return os.pread(region.fd, region.size, region.position)

    def _batch(self, entry: QueueEntry | CompactedEntry) -> bytes:
        return self.read_bytes(self._region(entry))

    def _entries_reaching(self, timestamp_ms: int):
        """The live batches from the first whose running max timestamp reaches the target."""
        start, comp = self.log_start_offset, self.compacted
        if comp is not None and start < comp.end:
            for i in range(max(comp.first_reaching(timestamp_ms), comp.find(start)), len(comp)):
                yield comp.entry(i)
            start = comp.end
        first = self.queue.find(start)
        if first is not None:
            j = self.queue.first_reaching(timestamp_ms)  # first batch, log start or not, reaching the target
            yield from self.queue.entries_from(max(j, first))

    def offset_for_timestamp(self, timestamp_ms: int):
        for entry in self._entries_reaching(timestamp_ms):
            if entry.max_timestamp >= timestamp_ms:
                hit = wire_records.first_offset_at_or_after(self._batch(entry), timestamp_ms, self.log_start_offset)
                if hit is not None:
                    return hit
        return None

    def max_timestamp(self):
        best = None
        comp = self.compacted
        if comp is not None and self.log_start_offset < comp.end:
            for entry in comp.entries_from(self.log_start_offset):
                if best is None or entry.max_timestamp > best.max_timestamp:
                    best = entry
        first = self.queue.find(max(self.log_start_offset, comp.end if comp is not None else 0))
        if first is not None:
            top = self.queue.last.running_max
            j = self.queue.first_reaching(top)
            if j >= first:
                candidates = [self.queue.entry(j)]
            else:  # the overall maximum is below the log start: look at what is left
                candidates = self.queue.entries_from(first)
            for entry in candidates:
                if best is None or entry.max_timestamp > best.max_timestamp:
                    best = entry
        if best is None:
            return None
        return wire_records.offset_of_max_timestamp(self._batch(best))

    def batch_headers(self, from_offset: int = 0):
        floor = self.store.commitlog.min_offset
        for entry in self._entries_from(from_offset):
            if isinstance(entry, QueueEntry) and entry.phys < floor:
                continue  # that commitlog file is gone
            region = self._region(entry)
            yield parse_header(os.pread(region.fd, HEADER_SIZE, region.position))

    # ----- aborted transactions -------------------------------------------------

    def append_aborted_txn(self, txn: AbortedTxn) -> None:
        self._check_online()
        try:
            self.queue.aborted.append(txn)
        except (StorageError, OSError) as exc:
            raise self.store.go_offline(f"indexing the aborted transaction ending at {txn.last_offset} "
                                        f"of {self.topic}-{self.partition} failed: {exc}") from exc

    def aborted_txns(self, start: int, upper: int) -> list[AbortedTxn]:
        start = max(start, self.log_start_offset)
        found: list[AbortedTxn] = []
        comp = self.compacted
        if comp is not None and start < comp.end:
            found, complete = comp.txns.collect(start, upper)
            if complete:
                return found
            start = comp.end  # the queue's file may still hold entries below: the generation's now
        return found + self.queue.aborted.collect(start, upper)[0]

    # ----- removing ------------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        comp = self.compacted
        if comp is not None and offset < comp.end:
            log_cleaner.abandon_committed(self.queue.dir)
            self.store.compacted[(self.topic, self.partition)] = comp.truncate(offset)
            self.changes += 1
        cut = self.store.truncate_queue(self.queue, offset)
        if cut:
            self.changes += 1
        if cut:
            self._set_size(self._measure())
            if self.log_start_offset > self.log_end_offset:  # the batch holding the log start went
                self._set_log_start(self.log_end_offset)
                self.store.persist_log_starts()  # else a crash raises the log end back to the old start
        end = min(offset, self.log_end_offset)
        if self.epochs.has_entries_from(end):
            if cut:
                # The TRUNCATE unit is on disk before the cache file forgets its epochs, so no
                # crash re-dispatches batches of an epoch the file no longer names.
                self.store.flush_logs([])
            self.epochs.truncate_from_end(end)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.changes += 1
        self.store.start_queue_at(self.queue, offset)
        comp = self.store.compacted.pop((self.topic, self.partition), None)
        if comp is not None:  # after the START_AT unit: until then it served the old log
            log_cleaner.abandon_committed(self.queue.dir)
            comp.delete()
        self._set_size(0)
        self.epochs.replace([])  # after the unit is durable, as truncate_to cuts the cache

    def delete_records_before(self, offset: int) -> None:
        if offset > self.log_end_offset:
            raise OffsetOutOfRange(f"cannot delete before {offset}: log ends at {self.log_end_offset}")
        if offset > self.log_start_offset:
            self._advance_to(offset)
            self.store.log_starts_moved()  # checkpointed before the request is answered

    def _advance_to(self, offset: int) -> int:
        """Move the log start to `offset`; returns the bytes of batches now wholly below it."""
        self.changes += 1
        freed = 0
        for entry in self._live_entries():
            if entry.last_offset >= offset:
                break
            freed += self._batch_size(entry)
        self._set_log_start(offset)
        self._set_size(self._size - freed)
        self.epochs.truncate_from_start(offset)
        i = self.queue.find(offset)
        self.queue.delete_files_below(self.queue.next_index if i is None else i)
        return freed

    def enforce_retention(self, now_ms: int) -> int:
        cfg = self.config
        target = self.log_start_offset
        left = self._size
        deletes = retention_deletes(cfg.cleanup_policy)  # never under cleanup.policy=compact alone
        for entry in self._live_entries():
            expired = deletes and cfg.retention_ms >= 0 and now_ms - entry.max_timestamp > cfg.retention_ms
            over = deletes and cfg.retention_bytes >= 0 and left - self._batch_size(entry) >= cfg.retention_bytes
            if not (expired or over):
                break
            left -= self._batch_size(entry)
            target = entry.last_offset + 1
        # The commitlog files this frees go at the store's reclaim, once per retention round for
        # every partition: collect walks every queue, and per partition it made a round over
        # 1,000 partitions take 15 s of the event loop, over 3,000 257 s (now 13 and 59 ms).
        return self._advance_to(target) if target > self.log_start_offset else 0

    # ----- compaction (log_cleaner.py, from the broker's cleaner threads) ---------

    @property
    def offline(self) -> str | None:
        """Why the store stopped serving, if it did (the cleaner leaves such a log alone)."""
        return self.store.offline

    def install_compacted(self, generation: CompactedLog) -> None:
        """On the owner's thread, after a swap: serve below its end from it, drop the consume
        queue's files wholly below that end, and count the bytes anew."""
        self.store.compacted[(self.topic, self.partition)] = generation
        i = self.queue.find(generation.end)
        self.queue.delete_files_below(self.queue.next_index if i is None else i)
        self.queue.aborted.trim_before(generation.end)  # the generation indexes those it kept
        self._set_size(self._measure())

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    def flush(self) -> None:
        """The log's own flush (flush.ms, close): its leader-epoch file too, which the write
        path's group commit (store.flush_logs) leaves to the checkpoint."""
        write_epochs_if_changed(self.epochs)
        self.store.flush_logs([self])

    @property
    def flush_group(self) -> QueueStore:
        return self.store  # every queue's records are in the one commitlog

    def close(self) -> None:
        self.flush()
