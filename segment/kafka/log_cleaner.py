"""Compaction of one segment-layout partition (Kafka's Cleaner), and its crash recovery.

A round, in a worker thread, over the closed segments below the first uncleanable offset
(cleaning_policy.py): the dirty segments' keys go into an OffsetMap, then the segments from
the log start to the end the map covers are rewritten in groups — consecutive segments of
at most segment.bytes together — each group into one new segment named by the group's first
base offset. The first uncleanable offset may be a last stable offset inside a segment: the
map stops there and the segment is rewritten whole, its records past the map's end all
kept, expired tombstones too (cleaning_policy.record_survives). Batches whose records all
stay are copied as bytes; the others are filtered (batch_filter.py). Offsets never change; the active segment
is never read. Transactions (txn_cleaning.py): batches of aborted transactions go, markers
go once no batch of theirs is left, and the new segment's `.txnindex` holds the kept ABORT
markers' entries.

Files of one group whose first segment is B, in the partition directory:

    B.cleaned/                          the new segment being written (B.log, B.index,
                                        B.timeindex, B.txnindex if it has an entry),
                                        fsynced when complete
    B.log.swap  B.index.swap  B.timeindex.swap  B.txnindex.swap
                                        the complete new segment, renamed out of B.cleaned/
                                        (indexes first, the .log last), then a directory
                                        fsync: from here the clean is committed
    B.log  B.index  B.timeindex ...     the swap renamed in place, after the group's old
                                        segments' files are deleted

The swap itself (delete the old files, rename the .swap files, replace the segments in the
partition's list) runs through `run_on_owner`: the broker passes a function that runs it on
its event loop, where every reader of the segment list lives, so no fetch sees half a swap.
A fetch response already holding a region of an old segment keeps its descriptor until sent
(segment/open_files.py), so deleting the old files under it is safe.

Crash behaviour (recover_interrupted_clean, run before a partition's segments are opened):
- a `*.cleaned/` directory is an unfinished clean: removed; the old segments are untouched;
- a `B.log.swap` is a committed clean: every segment whose base lies in [B, end of the swap)
  is deleted (the old group), the `.swap` files are renamed in place, and an index `.swap`
  that is missing (renamed out of order before the crash) is left to the segment's own
  rebuild (a `.txnindex` lost so names only transactions whose records the clean removed).
  A trailing old segment of the group whose every record was dropped starts at or after
  the swap's end and survives such a crash: it holds only superseded records, stays in
  offset order, and goes at the next round.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from segment.compaction import cleaning_policy as policy
from segment.compaction.txn_cleaning import CleanedTransactions, clean_batch
from segment.compaction.gil_slicer import GilSlicer
from segment.compaction.offset_map import OffsetMap
from segment.file_io import fsync_dir
from wire.record_batch import HEADER_SIZE, iter_batches, parse_header

from .log_segment import LogSegment, segment_name

log = logging.getLogger(__name__)

T = TypeVar("T")
READ_CHUNK = 8 * 1024 * 1024
_SUFFIXES = (".index", ".timeindex", ".txnindex", ".log")  # the .log last: its .swap marks the group committed


def stats_of(seg: LogSegment) -> policy.SegmentStats:
    first = seg.first_batch_timestamp if seg.first_batch_timestamp is not None else -1
    return policy.SegmentStats(seg.base_offset, seg.next_offset, seg.size, first, seg.max_timestamp)


def due(plog, first_dirty: int, now_ms: int, last_stable_offset: int | None = None) -> bool:
    """Whether the partition needs a round now (cleanup.policy compact, dirty enough).
    `last_stable_offset`: the partition's (None: the log end, a log without transactions)."""
    cfg = plog.config
    if not policy.compacts(cfg.cleanup_policy):
        return False
    closed = [stats_of(s) for s in list(plog.segments)[:-1]]
    if not closed:
        return False
    stable = plog.log_end_offset if last_stable_offset is None else last_stable_offset
    uncleanable = policy.first_uncleanable_offset(closed, closed[-1].next_offset, now_ms, cfg.min_compaction_lag_ms,
                                                  stable)
    return policy.is_due(closed, first_dirty, uncleanable, now_ms, cfg.min_cleanable_dirty_ratio,
                         cfg.max_compaction_lag_ms)


def clean(plog, first_dirty: int, now_ms: int, memory_bytes: int,
          run_on_owner: Callable[[Callable[[], T]], T] = lambda fn: fn(),
          slicer: GilSlicer | None = None, last_stable_offset: int | None = None) -> policy.CleanStats:
    """One round over `plog` (a SegmentPartitionLog), from a worker thread, its record walks
    paced by `slicer` so the event loop gets the GIL back. Returns what it did;
    stats.end_offset is None when there was nothing to clean. `last_stable_offset`: as for due."""
    stats = policy.CleanStats()
    slicer = slicer or GilSlicer()
    segments = list(plog.segments)
    closed = segments[:-1]
    if not closed:
        return stats
    cfg = plog.config
    stable = plog.log_end_offset if last_stable_offset is None else last_stable_offset
    uncleanable = policy.first_uncleanable_offset([stats_of(s) for s in closed], segments[-1].base_offset,
                                                  now_ms, cfg.min_compaction_lag_ms, stable)
    if first_dirty >= uncleanable:  # an open transaction holds back all that is dirty
        return stats
    offsets = OffsetMap(memory_bytes)
    dirty = [s for s in closed if s.next_offset > first_dirty and s.base_offset < uncleanable]
    if dirty:
        txns = CleanedTransactions(plog.aborted_txns(dirty[0].base_offset, uncleanable))
        _build_map(offsets, dirty, first_dirty, uncleanable, txns, stats, slicer)
    end = min(offsets.covered_end if offsets.covered_end is not None else first_dirty, uncleanable)
    if end <= plog.log_start_offset or end <= closed[0].base_offset:
        return stats
    producers_last = policy.last_batches_of_producers(slicer.each(plog.batch_headers(0)))
    to_clean = [s for s in closed if s.base_offset < end]
    # every transaction aborted among the batches rewritten: past `end` too, in its segment
    txns = CleanedTransactions(plog.aborted_txns(plog.log_start_offset, to_clean[-1].next_offset))
    for group in _groups(to_clean, cfg.segment_bytes):
        _clean_group(plog, group, offsets, end, txns, producers_last, now_ms, stats, run_on_owner, slicer)
    stats.end_offset = end
    return stats


def _build_map(offsets: OffsetMap, dirty: list[LogSegment], first_dirty: int, uncleanable: int,
               txns: CleanedTransactions, stats: policy.CleanStats, slicer: GilSlicer) -> None:
    """The dirty batches' keys, up to `uncleanable`: a segment's base, or a last stable offset
    inside a segment (the map then stops in it, as Kafka's does at its upper bound). A batch
    the map leaves out (a marker, an aborted transaction's) is still covered by it."""
    for seg in dirty:
        for batch in _batches(seg, stats):
            slicer.tick()
            header = parse_header(batch)
            if header.last_offset >= uncleanable:
                return
            skipped = txns.skip_in_map(batch)  # from the segment's start: it follows every transaction
            if header.last_offset < first_dirty:
                continue
            if not offsets.add_batch(batch, slicer.tick, keys=not skipped):
                return


def _batches(seg: LogSegment, stats: policy.CleanStats):
    """The segment's batches as bytes, read in large chunks."""
    position, size = 0, seg.size
    while position < size:
        chunk = seg.pread(min(READ_CHUNK, size - position), position)
        if len(chunk) >= HEADER_SIZE and parse_header(chunk).size > len(chunk):  # one batch over the chunk
            chunk = seg.pread(parse_header(chunk).size, position)
        used = 0
        view = memoryview(chunk)
        for pos, header in iter_batches(chunk):
            yield view[pos : pos + header.size]
            used = pos + header.size
        if used == 0:
            return  # torn tail: nothing more to read (appends never happen in closed segments)
        stats.bytes_read += used
        position += used


def _groups(segments: list[LogSegment], max_bytes: int) -> list[list[LogSegment]]:
    """Consecutive segments of at most max_bytes together whose offsets fit one segment's index."""
    groups: list[list[LogSegment]] = []
    for seg in segments:
        current = groups[-1] if groups else None
        if (current and sum(s.size for s in current) + seg.size <= max_bytes
                and seg.next_offset - current[0].base_offset < 2**31 - 1):
            current.append(seg)
        else:
            groups.append([seg])
    return groups


def _clean_group(plog, group: list[LogSegment], offsets: OffsetMap, end: int, txns: CleanedTransactions,
                 producers_last: set[int], now_ms: int, stats: policy.CleanStats, run_on_owner,
                 slicer: GilSlicer) -> None:
    base = group[0].base_offset
    directory: Path = plog.dir
    work = directory / f"{segment_name(base)}.cleaned"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    cleaned = LogSegment(work, base, plog.config.index_interval_bytes, now_ms, plog._files)
    try:
        for seg in group:
            drop_tombstones = policy.tombstones_expired(seg.max_timestamp, now_ms, plog.config.delete_retention_ms)

            def keep(record, _drop=drop_tombstones):
                slicer.tick()
                return policy.record_survives(record, offsets, end=end, drop_tombstones=_drop)

            for batch in _batches(seg, stats):
                slicer.tick()
                header = parse_header(batch)
                result, aborted = clean_batch(batch, txns, keep, expired=drop_tombstones,
                                              retain_empty=header.base_offset in producers_last)
                stats.records_dropped += result.records_dropped
                if result.data:
                    cleaned.append(result.data, parse_header(result.data))
                if aborted is not None:
                    cleaned.txn_index.append(aborted)
        cleaned.flush()
        written = cleaned.size
        cleaned.close()
        for suffix in _SUFFIXES:
            if (work / (segment_name(base) + suffix)).exists():  # a .txnindex only with an entry
                os.rename(work / (segment_name(base) + suffix), directory / (segment_name(base) + suffix + ".swap"))
        fsync_dir(directory)
    except BaseException:
        cleaned.close()
        shutil.rmtree(work, ignore_errors=True)
        raise
    os.rmdir(work)
    swapped = run_on_owner(lambda: _swap_in(plog, group, base, now_ms))
    fsync_dir(directory)
    if swapped:
        stats.groups_swapped += 1
        stats.bytes_written += written


def _swap_in(plog, group: list[LogSegment], base: int, now_ms: int) -> bool:
    """On the owner's thread: replace the group by the swapped-in segment, unless the log
    changed under the clean (retention, truncation or deletion took one of its segments); then
    the committed swap is rolled back, which is safe because the old segments are untouched."""
    with plog._lock:
        segments = plog.segments
        start = next((i for i, s in enumerate(segments) if s is group[0]), None)
        intact = (start is not None and segments[start : start + len(group)] == group
                  and start + len(group) < len(segments))
        if not intact:
            for suffix in _SUFFIXES:
                (plog.dir / (segment_name(base) + suffix + ".swap")).unlink(missing_ok=True)
            return False
        for seg in group:
            seg.delete()
        for suffix in _SUFFIXES:
            swapped = plog.dir / (segment_name(base) + suffix + ".swap")
            if swapped.exists():
                os.rename(swapped, plog.dir / (segment_name(base) + suffix))
        new = plog._new_segment(base, now_ms)
        new.load()
        new.seal()
        # A group whose every record went leaves no segment, except at the log's start, whose
        # name keeps the log start offset where it was across a restart (as in Kafka, cleaning
        # never moves it: a consumer's committed offset below it must not go out of range).
        segments[start : start + len(group)] = [new] if new.size or start == 0 else []
        if not new.size and start != 0:
            new.delete()
    return True


def recover_interrupted_clean(directory: Path) -> None:
    """Finish or roll back a clean a crash interrupted (see the top of this module)."""
    for work in directory.glob("*.cleaned"):
        shutil.rmtree(work, ignore_errors=True)
        log.info("%s: removed the unfinished clean %s", directory.name, work.name)
    changed = False
    for swap in sorted(directory.glob("*.log.swap")):
        base = int(swap.name.split(".")[0])
        end = _end_offset(swap, base)
        for path in list(directory.iterdir()):
            stem, _, suffix = path.name.partition(".")
            if suffix in ("log", "index", "timeindex", "txnindex") and stem.isdigit() and base <= int(stem) < max(end, base + 1):
                path.unlink()
        for suffix in _SUFFIXES:
            swapped = directory / (segment_name(base) + suffix + ".swap")
            if swapped.exists():
                os.rename(swapped, directory / (segment_name(base) + suffix))
        log.info("%s: finished the swap of the clean of %s (offsets %d to %d)", directory.name,
                 segment_name(base), base, end)
        changed = True
    for orphan in directory.glob("*.swap"):  # index swaps whose .log swap was already renamed
        orphan.unlink()
        changed = True
    if changed:
        fsync_dir(directory)


def _end_offset(path: Path, base: int) -> int:
    """The offset after the last whole batch of a segment file (headers only)."""
    end = base
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        position = 0
        while position + HEADER_SIZE <= size:
            header = parse_header(os.pread(f.fileno(), HEADER_SIZE, position))
            if header.batch_length < HEADER_SIZE - 12 or position + header.size > size:
                break
            end = header.last_offset + 1
            position += header.size
    return end


def now_ms() -> int:
    return int(time.time() * 1000)
