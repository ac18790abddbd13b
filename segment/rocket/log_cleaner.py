"""Compaction of one commitlog-layout partition, and its crash recovery.

The commitlog is shared by every partition, so it is never rewritten: as RocketMQ 5's
compaction topic does (CompactionLog: a per-queue compaction log with its own consume
queue, built in a `compacting` folder and swapped in), a round writes what survives of the
partition's offsets below a new end C' into a new generation of its own compacted file
(compacted_log.py) and swaps it for the old one. Offsets below C' are then served from that
file; the consume-queue files wholly below C' are deleted, and the commitlog files they
pointed into go as before, once no queue needs them (store.collect starts each compacted
queue at C').

A round (worker thread; Kafka's rules in segment/compaction/cleaning_policy.py):
- The partition is cut into "segments" for the rules: the compacted file (clean), then its
  consume-queue batches from C grouped into stretches of segment.bytes (a stretch also ends
  when a batch is newer than segment.ms after the stretch's first one). The last stretch is
  the active segment and is never cleaned; nor is a stretch newer than min.compaction.lag.ms.
- The dirty batches' keys go into an OffsetMap; C' is the end the map covers, at most the
  first uncleanable offset. The old generation's batches and the consume queue's batches
  in [C, C') are filtered (batch_filter.py: kept whole as bytes, or rewritten with the kept
  records' bytes at their original offsets); the last batch of each idempotent producer is
  kept, emptied if need be. A tombstone goes once its batch is older than delete.retention.ms.
  Transactions as segment/compaction/txn_cleaning.py says: the round never reaches the last
  stable offset, batches of aborted transactions go, markers outlive their batches, and the
  generation's own `.txnindex` holds the kept ABORT markers' entries.
- Batches are read with pread from the consume-queue and commitlog files, only as far as
  they are written, so appends go on; the log's owner (the event loop, where every reader
  is) is only asked to run the swap at the end (`run_on_owner`).

Files of a round ending at C' in the partition's directory:

    compacting/                      the new generation being written (<C'>.compacted,
                                     .entries, .keys, .txnindex), each fsynced when complete
    <C'>.compacted.txnindex.swap     renamed out of compacting/, side files first and the
    <C'>.compacted.keys.swap         data last, then a directory fsync: from here the round
    <C'>.compacted.entries.swap      is committed
    <C'>.compacted.swap
    <C'>.compacted{,.entries,...}    after the swap: the old generation's files deleted (its
                                     data last), the .swap files renamed in place, dir fsync

Crash behaviour (recover_interrupted_clean, before the store opens the partition): a
`compacting/` folder is an unfinished round: removed, the old generation is untouched. A
`<C'>.compacted.swap` is a committed round: every other generation's files are deleted and
the .swap files renamed in place (a side file that is missing is rebuilt from the data by
compacted_log.py, but for the .txnindex, which names only transactions whose records the
round removed); side .swap files without their data .swap are leftovers of a finished
swap and go. So a kill -9 at any point leaves either the old generation or the new one,
never a mix, and every key's latest record is in one of them or in the consume queue above
it. A round whose log changed under it (retention, truncation, deletion) is rolled back at
the swap by deleting its .swap files; a follower's truncation also deletes any committed
.swap first, so a crash cannot finish a round over offsets the truncation removed.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from segment.compaction import cleaning_policy as policy
from segment.compaction.txn_cleaning import CleanedTransactions, clean_batch
from segment.compaction.gil_slicer import GilSlicer
from segment.compaction.offset_map import OffsetMap
from segment.file_io import fsync_dir, pwrite_all
from segment.fsync_count import fsync
from segment.open_files import OpenFiles
from segment.txn_index import AbortedTxn
from segment.txn_index import encode as encode_txns
from wire.record_batch import HEADER_SIZE, parse_header

from . import compacted_log as cl
from .consume_queue import QueueEntry
from .queue_file import ENTRY, ENTRY_SIZE, TIME

log = logging.getLogger(__name__)

T = TypeVar("T")
WORK_DIR = "compacting"
_SWAP_ORDER = (cl.TXNS, cl.KEYS, cl.ENTRIES, "")  # the data last: its .swap marks the round committed
QUEUE_READ = 4096  # entries per pread of a consume-queue file


@dataclass(frozen=True)
class Snapshot:
    """The partition's bounds when a round starts."""

    changes: int  # the log's change counter: a different one at the swap rolls the round back
    log_start: int
    compacted: cl.CompactedLog | None
    written_to: int  # commitlog offset up to which units are in the files


def snapshot(plog) -> Snapshot:
    """Read from the worker: each field is one atomic read, and the counter is read first, so
    a change made while the others are read shows at the swap."""
    changes = plog.changes
    return Snapshot(changes, plog.log_start_offset, plog.compacted, plog.store.commitlog.written_pos)


# ----- reading behind the writer ------------------------------------------------------

def queue_entries(queue, written_to: int) -> Iterator[QueueEntry]:
    """Every entry of `queue` whose unit lies wholly before commitlog offset `written_to`,
    read from the files as far as they are written (safe while the owner appends)."""
    index = 0
    for f in list(queue.files):
        count, index = f.written, f.first_index
        rel = 0
        while rel < count:
            n = min(QUEUE_READ, count - rel)
            q, t = f.read_written(rel, n)
            k = len(q) // ENTRY_SIZE
            if k == 0:
                return
            for (phys, size, base), (max_ts, running, delta) in zip(ENTRY.iter_unpack(q[: k * ENTRY_SIZE]),
                                                                    TIME.iter_unpack(t[: k * ENTRY_SIZE])):
                if phys + size > written_to:
                    return
                yield QueueEntry(index + rel, phys, size, base, base + delta, max_ts, running)
                rel += 1


class UnitReader:
    """Batches of commitlog units by position, from a snapshot of the commitlog's files."""

    def __init__(self, commitlog, header_size: int) -> None:
        self.files = list(commitlog.files)
        self.header_size = header_size

    def batch(self, entry: QueueEntry) -> bytes:
        for f in reversed(self.files):
            if f.base <= entry.phys < f.end:
                return os.pread(f.fd, entry.size - self.header_size, entry.phys - f.base + self.header_size)
        raise OSError(f"commitlog offset {entry.phys} is in no file")


# ----- when a round is due --------------------------------------------------------------

def _stretches(entries: list[QueueEntry], header_size: int, segment_bytes: int,
               segment_ms: int) -> list[policy.SegmentStats]:
    out: list[policy.SegmentStats] = []
    group: list[QueueEntry] = []
    size = 0

    def close() -> None:
        out.append(policy.SegmentStats(group[0].base_offset, group[-1].last_offset + 1, size,
                                       group[0].max_timestamp, max(e.max_timestamp for e in group)))

    for e in entries:
        batch = e.size - header_size
        if group and (size + batch > segment_bytes or e.max_timestamp - group[0].max_timestamp > segment_ms):
            close()
            group, size = [], 0
        group.append(e)
        size += batch
    if group:
        close()
    return out


def _plan(plog, snap: Snapshot, first_dirty: int, now_ms: int, slicer: GilSlicer | None,
          last_stable_offset: int | None):
    """(dirty entries in offset order, closed stretches, uncleanable offset, first dirty)."""
    slicer = slicer or GilSlicer()
    comp = snap.compacted
    floor = max(snap.log_start, comp.end if comp is not None else 0)
    entries = [e for e in slicer.each(queue_entries(plog.queue, snap.written_to)) if e.base_offset >= floor]
    cfg = plog.config
    stretches = _stretches(entries, plog.header_size, cfg.segment_bytes, cfg.segment_ms)
    closed = stretches[:-1]
    if comp is not None and len(comp):
        closed.insert(0, policy.SegmentStats(comp.first_offset, comp.end, comp.size, comp.max_ts[0],
                                             max(comp.max_ts)))
    active_base = stretches[-1].base_offset if stretches else plog.log_end_offset
    stable = plog.log_end_offset if last_stable_offset is None else last_stable_offset
    uncleanable = policy.first_uncleanable_offset(closed, active_base, now_ms, cfg.min_compaction_lag_ms, stable)
    return entries, closed, uncleanable, max(first_dirty, floor)


def due(plog, first_dirty: int, now_ms: int, slicer: GilSlicer | None = None,
        last_stable_offset: int | None = None) -> bool:
    """Whether the partition needs a round now (cleanup.policy compact, dirty enough). It reads
    every consume-queue entry of the partition, so it is paced like a round.
    `last_stable_offset`: the partition's (None: the log end, a log without transactions)."""
    cfg = plog.config
    if not policy.compacts(cfg.cleanup_policy):
        return False
    snap = snapshot(plog)
    _entries, closed, uncleanable, first_dirty = _plan(plog, snap, first_dirty, now_ms, slicer, last_stable_offset)
    return bool(closed) and policy.is_due(closed, first_dirty, uncleanable, now_ms, cfg.min_cleanable_dirty_ratio,
                                          cfg.max_compaction_lag_ms)


# ----- a round ------------------------------------------------------------------------

def clean(plog, first_dirty: int, now_ms: int, memory_bytes: int,
          run_on_owner: Callable[[Callable[[], T]], T] = lambda fn: fn(),
          slicer: GilSlicer | None = None, last_stable_offset: int | None = None) -> policy.CleanStats:
    """One round over `plog` (a RocketPartitionLog), from a worker thread, its record walks
    paced by `slicer` so the event loop gets the GIL back. stats.end_offset is None when there
    was nothing to clean. `last_stable_offset`: as for due."""
    stats = policy.CleanStats()
    slicer = slicer or GilSlicer()
    snap = snapshot(plog)
    entries, _closed, uncleanable, first_dirty = _plan(plog, snap, first_dirty, now_ms, slicer, last_stable_offset)
    if first_dirty >= uncleanable:  # an open transaction holds back all that is dirty
        return stats
    reader = UnitReader(plog.store.commitlog, plog.header_size)
    offsets = OffsetMap(memory_bytes)
    txns = CleanedTransactions(plog.aborted_txns(first_dirty, uncleanable))
    for e in slicer.each(entries):
        if e.last_offset >= uncleanable:
            break
        if e.last_offset >= first_dirty:
            batch = reader.batch(e)
            stats.bytes_read += len(batch)
            # a batch the map leaves out (a marker, an aborted transaction's) is still covered by it
            if not offsets.add_batch(batch, slicer.tick, keys=not txns.skip_in_map(batch)):
                break
    comp = snap.compacted
    start = comp.end if comp is not None else snap.log_start
    end = min(offsets.covered_end if offsets.covered_end is not None else first_dirty, uncleanable)
    if end <= start:
        return stats
    producers_last = policy.last_batches_of_producers(slicer.each(_headers(comp, entries, reader, snap.log_start)))
    txns = CleanedTransactions(plog.aborted_txns(snap.log_start, end))  # those among the batches rewritten
    written = _write_generation(plog, snap, entries, end, reader, offsets, txns, producers_last, now_ms, stats,
                                slicer)
    if run_on_owner(lambda: swap_in(plog, snap, end, entries)):
        stats.groups_swapped = 1
        stats.bytes_written = written
    stats.end_offset = end
    return stats


def _headers(comp, entries: list[QueueEntry], reader: UnitReader, log_start: int):
    if comp is not None:
        for i in range(comp.find(log_start), len(comp)):
            yield parse_header(comp.data.pread(HEADER_SIZE, comp.positions[i]))
    for e in entries:
        f = next(f for f in reversed(reader.files) if f.base <= e.phys < f.end)
        yield parse_header(os.pread(f.fd, HEADER_SIZE, e.phys - f.base + reader.header_size))


def _write_generation(plog, snap: Snapshot, entries, end: int, reader: UnitReader, offsets: OffsetMap,
                      txns: CleanedTransactions, producers_last: set[int], now_ms: int, stats: policy.CleanStats,
                      slicer: GilSlicer) -> int:
    directory: Path = plog.queue.dir
    work = directory / WORK_DIR
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    name = cl.data_name(end)
    fd = os.open(work / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    rows: list[tuple[int, int, int, int, int]] = []
    keys: list[tuple[bytes, int]] = []
    aborted: list[AbortedTxn] = []  # the kept ABORT markers' index entries
    position = 0
    try:
        for batch in slicer.each(_sources(snap, entries, end, reader)):
            stats.bytes_read += len(batch)
            header = parse_header(batch)
            expired = policy.tombstones_expired(header.max_timestamp, now_ms, plog.config.delete_retention_ms)
            kept_keys: list[bytes] = []

            def keep(record, _expired=expired, _kept=kept_keys):
                slicer.tick()
                if policy.record_survives(record, offsets, end=end, drop_tombstones=_expired):
                    _kept.append(record.key)
                    return True
                return False

            result, entry = clean_batch(batch, txns, keep, expired=expired,
                                        retain_empty=header.base_offset in producers_last)
            stats.records_dropped += result.records_dropped
            if entry is not None:
                aborted.append(entry)
            if not result.data:
                continue
            out = parse_header(result.data)
            pwrite_all(fd, result.data, position, name)
            rows.append((position, len(result.data), out.base_offset, out.last_offset, out.max_timestamp))
            keys += [(key, position) for key in kept_keys]
            position += len(result.data)
        fsync(fd, "cleaned")
        os.close(fd)
        fd = -1
        entries_path = work / (name + cl.ENTRIES)
        cl._write_synced(entries_path, cl.encode_entries(rows))
        cl.write_key_index(work / (name + cl.KEYS), plog.topic, keys)
        cl._write_synced(work / (name + cl.TXNS), encode_txns(aborted))
        fsync_dir(work)
        for suffix in _SWAP_ORDER:
            os.rename(work / (name + suffix), directory / (name + suffix + ".swap"))
        fsync_dir(directory)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        shutil.rmtree(work, ignore_errors=True)
        raise
    os.rmdir(work)
    return position


def _sources(snap: Snapshot, entries, end: int, reader: UnitReader) -> Iterator[bytes]:
    """The batches a round filters, in offset order: the old generation's from the log
    start, then the consume queue's below `end`."""
    comp = snap.compacted
    if comp is not None:
        for i in range(comp.find(snap.log_start), len(comp)):
            yield comp.read(comp.entry(i))
    for e in entries:
        if e.last_offset >= end:
            return
        yield reader.batch(e)


def swap_in(plog, snap: Snapshot, end: int, entries) -> bool:
    """On the owner's thread: replace the partition's generation by the committed one, unless
    the log changed since the snapshot (then the round is rolled back: its .swap files go)."""
    directory = plog.queue.dir
    name = cl.data_name(end)
    if plog.changes != snap.changes or plog.compacted is not snap.compacted or end > plog.log_end_offset:
        for suffix in _SWAP_ORDER:
            (directory / (name + suffix + ".swap")).unlink(missing_ok=True)
        fsync_dir(directory)
        return False
    old = plog.compacted
    if old is not None:
        old.delete()
    for suffix in reversed(_SWAP_ORDER):  # the data first: from then on it is the generation
        os.rename(directory / (name + suffix + ".swap"), directory / (name + suffix))
    fsync_dir(directory)
    plog.install_compacted(cl.CompactedLog(directory, plog.topic, end, plog.store.open_files))
    return True


def abandon_committed(directory: Path) -> None:
    """Delete a committed round not swapped in yet (a truncation must not let a crash finish it)."""
    swaps = list(Path(directory).glob(f"*{cl.SUFFIX}*.swap"))
    for path in sorted(swaps, key=lambda p: p.name.endswith(cl.SUFFIX + ".swap")):  # the data last
        path.unlink(missing_ok=True)
    if swaps:
        fsync_dir(directory)


def recover_interrupted_clean(directory: Path) -> None:
    """Finish or roll back a round a crash interrupted (see the top of this module)."""
    directory = Path(directory)
    work = directory / WORK_DIR
    if work.exists():
        shutil.rmtree(work, ignore_errors=True)
        log.info("%s: removed an unfinished compaction round", directory)
    changed = False
    for swap in sorted(directory.glob(f"*{cl.SUFFIX}.swap")):
        end = cl.generation_end(swap.name[: -len(".swap")])
        for path in directory.iterdir():  # the other generations' files (a round replaces them all)
            if cl.SUFFIX in path.name and not path.name.endswith(".swap") and not path.name.startswith(f"{end:020d}."):
                path.unlink()
        for suffix in reversed(_SWAP_ORDER):
            pending = directory / (cl.data_name(end) + suffix + ".swap")
            if pending.exists():
                os.rename(pending, directory / (cl.data_name(end) + suffix))
        log.info("%s: finished the swap of the compacted generation ending at %d", directory, end)
        changed = True
    for orphan in directory.glob(f"*{cl.SUFFIX}*.swap"):
        orphan.unlink()
        changed = True
    if changed:
        fsync_dir(directory)


def open_generation(directory: Path, topic: str, files: OpenFiles) -> cl.CompactedLog | None:
    """The partition's compacted generation after recovery, if it has one (the highest end
    wins should two be present, which the protocol never leaves)."""
    ends = sorted(e for e in (cl.generation_end(p.name) for p in Path(directory).iterdir()) if e is not None)
    for stale in ends[:-1]:
        cl.CompactedLog(directory, topic, stale, files).delete()
    return cl.CompactedLog(directory, topic, ends[-1], files) if ends else None


def now_ms() -> int:
    return int(time.time() * 1000)
