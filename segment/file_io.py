"""Writes that either store every byte or say they did not, for both engines.

A full disk shows up two ways: `pwrite` returns fewer bytes than asked (the filesystem took
what fit) and the next one raises ENOSPC; a write into a hole of a sparse file, or into a
mapped page of one, fails the same way (a mapping with SIGBUS, which kills the process). So:
`pwrite_all` loops until everything is written or raises, and `reserve` allocates a file's
blocks ahead of the writes that will land in them, so a write or a mapped store into reserved
space cannot fail for room. Both raise `WriteRefused`; the caller undoes what it started.
Small files rewritten whole (checkpoints) go through `replace_file`: old or new, never half.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from .fsync_count import fsync
from .storage_errors import WriteRefused


def pwrite_all(fd: int, data, position: int, what: str | Path) -> None:
    """Write all of `data` at `position`, or raise WriteRefused (some of it may be written:
    the caller cuts the file back). `what` names the file in the error (a Path is formatted
    only then: this runs for every batch)."""
    view = memoryview(data)
    try:
        while view:
            n = os.pwrite(fd, view, position)
            if n <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            view, position = view[n:], position + n
    except OSError as exc:
        raise WriteRefused(f"cannot write {len(data)} bytes to {what}: {exc.strerror or exc}") from exc


def reserve(fd: int, offset: int, length: int, what: str) -> None:
    """Allocate the file's blocks for [offset, offset + length) (posix_fallocate: no change to
    the bytes, the file grows if it is shorter), or raise WriteRefused."""
    if length <= 0:
        return
    try:
        os.posix_fallocate(fd, offset, length)
    except OSError as exc:
        raise WriteRefused(f"cannot allocate {length} bytes of {what}: {exc.strerror or exc}") from exc


def replace_file(path: Path, text: str) -> None:
    """Make `path` hold `text`, so that after a crash it holds either this or what it held
    before: write `<name>.tmp`, fsync it, rename it over `path`, fsync the directory (without
    that last fsync the rename itself may be lost, and a later write ordered after it — a log
    truncation, an append — could reach the disk while the file still says the old thing)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        fsync(f.fileno(), "checkpoint")
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make the directory's entries durable (creations, renames and unlinks in it)."""
    fsync_path(directory, "directory")


def fsync_path(path: Path, kind: str) -> None:
    """fsync through a descriptor opened for it: a file's data (whoever wrote it), a directory's
    entries; counted under `kind` (fsync_count.py)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fsync(fd, kind)
    finally:
        os.close(fd)
