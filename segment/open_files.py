"""A bound on the file descriptors the stores hold: files open on first use, idle ones close.

Per-partition files held open forever bound the partition count by RLIMIT_NOFILE: the segment
layout has three files a segment (`.log`, `.index`, `.timeindex`), so a 10,000-partition topic
needed 30,000 descriptors and the broker ran out at ~6,663 partitions under a 20,000 limit; the
commitlog layout has two a consume-queue file (entries and `.time`) and ran out at ~10,000.
Then it could not accept connections either. Here each such file is a `SegmentFile` that is
opened when it is used and kept in one least-recently-used set (`OpenFiles`) of at most
`capacity` files, which the broker shares between both layouts (`--max-open-segment-files`);
opening one more closes the least recently used. Sealed files (no appends: a segment or queue
file that is not the last) go first, then active ones, so the active files of hot partitions
stay open. PostgreSQL's virtual file descriptors (fd.c) work the same way. The commitlog
layout's shared files (commitlog, key index) are few and big, and stay open outside the bound.

Nothing is lost by closing:
- A file with writes not yet fsynced closes without an fsync, and stays dirty: its next `sync`
  (a flush, a checkpoint, a clean shutdown) opens a descriptor for the fsync. Eviction happens
  on the event loop, in the middle of a request, mostly to files that request has just written
  (a produce to more partitions than the bound): an fsync at each one stalled every client
  1-4 s for a 5,000-partition produce (measured when it did). PostgreSQL's checkpointer syncs closed
  files the same way. A writeback error while no descriptor is open is reported to the first
  fsync of the next one (Linux 4.16 and later: an error nobody has seen is not lost to a new
  opener), so that `sync` raises it; the one gap, as for PostgreSQL, is a kernel that drops
  the inode, and its error with it, before the reopen. A failed `sync` is kept on the file:
  every later `sync` raises it (a segment's log goes offline, the commitlog store at its next
  checkpoint, as for any failed fsync) and the file is never opened again, since a new
  descriptor would not report it. A file that is deleted (or whose directory is being
  removed) needs no fsync. Files are renamed only synced or forgotten (cleaner swaps,
  compacted generations), so a dirty file's path still names it.
- A descriptor is a `FileHandle`, closed only when nothing refers to it any more. A fetch
  response's file region holds the handle of the file it was read from (`FileRegion.holder`), so
  evicting the file, or deleting its segment, never closes a descriptor that a send in flight
  still reads — nor lets its number be reused for another file under that send. The same holds
  for code that preads through a handle in another thread (flush, topic creation, the cleaner).
The bound is therefore `capacity` files (those opened only for an fsync counted) plus those
pinned by responses not yet sent.
"""

from __future__ import annotations

import errno
import os
import resource
import threading
import weakref
from collections import OrderedDict
from pathlib import Path

from segment.file_io import fsync_path, pwrite_all
from segment.fsync_count import fsync, kind_of
from segment.storage_errors import LogClosed, LogOffline


def default_capacity() -> int:
    """Half the soft RLIMIT_NOFILE: the other half is left for sockets and everything else."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(soft // 2, 16)


class FileHandle:
    """One open descriptor; closed when the last reference to the handle goes."""

    __slots__ = ("fd", "__weakref__")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        weakref.finalize(self, os.close, fd)


class OpenFiles:
    """The least-recently-used set of open files of a broker's stores (thread-safe)."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = default_capacity() if capacity is None else capacity
        if self.capacity < 1:
            raise ValueError(f"max open segment files must be at least 1, not {self.capacity}")
        self._sealed: OrderedDict[SegmentFile, None] = OrderedDict()  # evicted first
        self._active: OrderedDict[SegmentFile, None] = OrderedDict()
        # reentrant: a FileHandle can be freed (its fd closed) inside a locked section
        self._lock = threading.RLock()
        self._syncing = 0  # descriptors opened only to fsync a closed file: they count too
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sealed) + len(self._active) + self._syncing

    def acquire(self, f: SegmentFile) -> FileHandle:
        """The file's open handle, opening it (and closing the least recently used) if needed."""
        with self._lock:
            handle = f._handle
            if handle is not None:
                (self._sealed if f.sealed else self._active).move_to_end(f)
                return handle
            if f.gone:
                raise LogClosed(f"{f.path} was deleted")
            if f.sync_error is not None:
                raise LogOffline(f"fsync of {f.path} failed: {f.sync_error}")
            while len(self) >= self.capacity:
                self._evict_one()
            fd = self._open(f)
            handle = f._handle = FileHandle(fd)
            (self._sealed if f.sealed else self._active)[f] = None
            return handle

    def _open(self, f: SegmentFile) -> int:
        flags = os.O_RDWR | (0 if f.created else os.O_CREAT)
        while True:
            try:
                fd = os.open(f.path, flags, 0o644)
            except OSError as exc:
                # Sockets share the process's limit: give them room by closing more of ours.
                if exc.errno in (errno.EMFILE, errno.ENFILE) and len(self):
                    self._evict_one()
                    continue
                raise
            f.created = True
            return fd

    def fsync(self, f: SegmentFile) -> None:
        """fsync `f` through its open descriptor, or one opened for it if it is closed, holding
        a place in the bound meanwhile: the file may be evicted during the fsync while its
        descriptor stays open, and a closed one needs a new descriptor; either was one file
        past the bound for as long as the fsync took."""
        with self._lock:
            while len(self) >= self.capacity and (self._sealed or self._active):
                self._evict_one()
            self._syncing += 1
            handle = f._handle
        try:
            if handle is not None:
                fsync(handle.fd, kind_of(f.path.name))
            else:
                fsync_path(f.path, kind_of(f.path.name))
        finally:
            with self._lock:
                self._syncing -= 1

    def _evict_one(self) -> None:
        """Close the least recently used file; its unsynced writes wait for its next sync."""
        tier = self._sealed if self._sealed else self._active
        victim, _ = tier.popitem(last=False)
        victim._handle = None  # the descriptor closes with its last reference
        self.evictions += 1

    def set_sealed(self, f: SegmentFile, sealed: bool) -> None:
        """A sealed segment's files (no appends) are closed before any active segment's."""
        with self._lock:
            if f.sealed != sealed and f._handle is not None:
                (self._active if sealed else self._sealed).pop(f)
                (self._sealed if sealed else self._active)[f] = None
            f.sealed = sealed

    def release(self, f: SegmentFile) -> None:
        """Drop the file from the set; its descriptor closes once no region holds it."""
        with self._lock:
            self._sealed.pop(f, None)
            self._active.pop(f, None)
            f._handle = None

    def handle_if_open(self, f: SegmentFile) -> FileHandle | None:
        with self._lock:
            return f._handle


class SegmentFile:
    """One file of a log segment or consume queue, opened through its OpenFiles whenever it is
    used. `created`: the file exists (found on disk, or opened once), so a reopen never creates
    it again, say after its directory was renamed for deletion."""

    def __init__(self, path: Path, files: OpenFiles, created: bool = False) -> None:
        self.path = path
        self.files = files
        self._handle: FileHandle | None = None
        self.created = created
        self.sealed = False
        self.gone = False  # deleted: never reopened (a new segment may take the name)
        self.writes = 0  # writes and truncations done ...
        self.synced = 0  # ... and how many of them an fsync covered
        self.sync_error: OSError | None = None

    @property
    def dirty(self) -> bool:
        return self.writes > self.synced

    def handle(self) -> FileHandle:
        return self.files.acquire(self)

    def pread(self, size: int, position: int) -> bytes:
        return os.pread(self.handle().fd, size, position)

    def size(self) -> int:
        return os.fstat(self.handle().fd).st_size

    def write(self, data, position: int) -> None:
        """All of `data` at `position`, or WriteRefused (segment/file_io.py)."""
        handle = self.handle()
        try:
            pwrite_all(handle.fd, data, position, self.path)
        finally:
            self.writes += 1

    def truncate(self, size: int) -> None:
        handle = self.handle()
        try:
            os.ftruncate(handle.fd, size)
        finally:
            self.writes += 1

    def sync(self) -> None:
        """fsync what was written, through a descriptor opened for it if the file was closed
        since; raises OSError if this or an earlier sync failed."""
        if self.sync_error is not None:
            raise self.sync_error
        written = self.writes
        if written == self.synced or self.gone:
            return
        try:
            self.files.fsync(self)
        except FileNotFoundError:
            if self.gone:
                return  # deleted meanwhile: nothing to keep
            raise
        except OSError as exc:
            self.sync_error = exc
            raise
        self.synced = max(self.synced, written)

    def close(self) -> None:
        """Stop holding the file open (the caller has flushed what must be durable)."""
        self.files.release(self)

    def forget(self) -> None:
        """Never open the file again (its directory is being removed); it closes once unused."""
        self.gone = True
        self.files.release(self)

    def delete(self) -> None:
        self.forget()
        self.path.unlink(missing_ok=True)
