"""How many fsyncs the storage engines asked of the disk, by the kind of file made durable.

Every fsync of the two engines goes through `fsync(fd, kind)`: a segment's `.log`, `.index`,
`.timeindex` and `.txnindex`, the commitlog, a consume queue's two files, checkpoints written
whole (file_io.replace_file), directories. The counts are what a layout costs a disk whatever
the timing: the write path's contract test reads them to check that one fsync of the shared
commitlog answers every partition of a request, and /metrics shows them
(`twinlog_storage_fsyncs_total{file=...}`), so an operator sees the same figure.

fsyncs run in worker threads (group commit, the periodic flush, checkpoints): the counter
takes a lock, which costs nothing beside an fsync.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections import Counter

_counts: Counter[str] = Counter()
_lock = threading.Lock()
_libc = ctypes.CDLL(None, use_errno=True)


def fsync(fd: int, kind: str) -> None:
    """os.fsync(fd), counted under `kind` once it returned (a failed fsync is not counted)."""
    os.fsync(fd)
    with _lock:
        _counts[kind] += 1


def syncfs(path: str, kind: str) -> None:
    """syncfs(2) of the filesystem holding `path` (every dirty file of it at once), counted as
    one under `kind`. Raises OSError."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), path)
    finally:
        os.close(fd)
    with _lock:
        _counts[kind] += 1


def fsyncs() -> dict[str, int]:
    """kind -> fsyncs completed by this process so far."""
    with _lock:
        return dict(_counts)


def kind_of(name: str) -> str:
    """The kind of an engine file by its name: its suffix (a segment's `log`, `index`,
    `timeindex`, `txnindex`; a consume queue's `time`), or `consumequeue` for a bare 20-digit
    name (a consume queue's entries)."""
    _, dot, suffix = name.rpartition(".")
    return suffix if dot else "consumequeue"
