"""fsync a segment's files at once, not one after another.

A segment's flush makes its `.log`, `.index`, `.timeindex` and `.txnindex` durable before the
recovery point passes them (log_loader.py trusts the index entries below it). One after another
that was up to four fsyncs in a row (strace of bench/compare.py's "fsync before ack" cell: the
`.log`, then the `.index`, then the `.timeindex`, 0.1-16 ms each, the round their sum). Run
together, their writes reach the disk at once and the block layer merges the cache flushes
pending together (with a journal, ext4 also commits their metadata in one transaction; the
machine the figures come from has none), so the round takes about the longest of them. (A
`flush.messages` acknowledgement now waits on the `.log` alone: SegmentPartitionLog.sync_log.)

Only dirty files are fsynced (a file nothing was written to since its last sync costs
nothing); the first runs in the calling thread, the others on a small pool of this module's
own, whose jobs wait on nothing else, so callers in any thread (the write path's fsync pool,
the periodic flush, a roll) may use it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from segment.open_files import SegmentFile

SYNC_THREADS = 8  # a segment has 4 files: two concurrent flushes' worth of helpers

_pool = ThreadPoolExecutor(SYNC_THREADS, thread_name_prefix="segment-sync")


def sync_together(files: list[SegmentFile]) -> None:
    """SegmentFile.sync() of each file, concurrently; raises the first file's OSError (in the
    order given) once every sync has ended, so none is left running behind the caller."""
    dirty = [f for f in files if f.dirty or f.sync_error is not None]
    if len(dirty) <= 1:
        for f in dirty:
            f.sync()
        return
    others = [_pool.submit(f.sync) for f in dirty[1:]]
    error: OSError | None = None
    try:
        dirty[0].sync()
    except OSError as exc:
        error = exc
    for job in others:
        try:
            job.result()
        except OSError as exc:
            error = error or exc
    if error is not None:
        raise error
