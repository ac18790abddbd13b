"""Opening a segment log's directory after a stop, clean or not (Kafka's LogLoader).

Crash behaviour: batches before the recovery point (everything known to be fsynced) are
trusted, whole segments and the part of the segment holding it up to its last index entry below
it; from there on each segment is scanned and cut back to its last valid batch (see
log_segment.py), so a kill -9 re-reads the unflushed tail. A segment after a torn one cannot
hold valid data (appends are sequential) and is removed, as is an empty segment that is not the
last. Every `.txnindex` is cut to its segment's valid end (its entries past the scan's start
are rebuilt by the log, txn_replay.py). Left over from an interrupted write: `*.tmp` files
(removed), an index without its `.log` (removed), a clean the cleaner did not finish
(log_cleaner.recover_interrupted_clean).

It is apart from partition_log.py because it runs once, before the log serves, and decides
only which segments the log starts with.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Callable

from .log_cleaner import recover_interrupted_clean
from .log_segment import LogSegment

log = logging.getLogger(__name__)


def load_segments(directory: Path, recovery_point: int, clean: bool, now_ms: int,
                  new_segment: Callable[[int, int], LogSegment]) -> tuple[list[LogSegment], list[LogSegment]]:
    """The log's segments, oldest first (an empty log gets one at 0), the older ones sealed; and
    those of them a scan recovered (their .txnindex is rebuilt). `clean`: the broker stopped
    cleanly, so every segment is trusted."""
    # One listing of the directory, not six (a start lists every partition's)
    names = [n for n in os.listdir(directory) if not n.startswith(".")]
    for name in names:
        if name.endswith(".tmp"):
            (directory / name).unlink()
    if any(name.endswith((".cleaned", ".swap")) for name in names):
        recover_interrupted_clean(directory)  # changes the directory: read it again
        names = [n for n in os.listdir(directory) if not n.startswith(".")]
    paths = [directory / name for name in names if not name.endswith(".tmp")]
    bases = sorted(int(p.stem) for p in paths if p.suffix == ".log" and p.stem.isdigit())
    for path in paths:  # indexes without a log are orphans
        if path.suffix in (".index", ".timeindex", ".txnindex") and (not path.stem.isdigit() or int(path.stem) not in bases):
            path.unlink()
    started = time.monotonic()
    torn = False
    cut = dropped = 0  # bytes cut from a torn segment; bytes of the segments after it
    segments: list[LogSegment] = []
    scanned: list[LogSegment] = []
    for base in bases:
        seg = new_segment(base, now_ms)
        if torn or (segments and base < segments[-1].next_offset):
            dropped += seg.log.size()
            seg.delete()  # after a torn segment nothing valid can follow
            continue
        if clean or _below(seg, bases, recovery_point):
            seg.load()  # falls back to a full recovery if the files disagree
        else:
            cut = seg.recover(recovery_point)
            torn = cut > 0
            scanned.append(seg)
        seg.txn_index.truncate_from(seg.next_offset)  # markers a cut took
        if segments and seg.size == 0 and base != bases[-1]:
            seg.delete()
            continue
        segments.append(seg)
    if not segments:
        segments.append(new_segment(0, now_ms))
    for seg in segments[:-1]:
        seg.seal()
    if cut or dropped:
        log.warning("%s: recovery truncated %d bytes (torn tail %d, later segments %d); log end offset "
                    "now %d; took %.1f ms", directory.name, cut + dropped, cut, dropped,
                    segments[-1].next_offset, (time.monotonic() - started) * 1000)
    return segments, [seg for seg in scanned if seg in segments]


def _below(seg: LogSegment, bases: list[int], recovery_point: int) -> bool:
    """True when the whole segment lies below the recovery point (its successor starts at or before it)."""
    i = bases.index(seg.base_offset)
    return i + 1 < len(bases) and bases[i + 1] <= recovery_point
