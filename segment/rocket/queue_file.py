"""One pair of a consume queue's files (consume_queue.py): queue entries and their time entries.

    <20-digit first entry index>        the queue entries
    <20-digit first entry index>.time   the time entries, one per queue entry

Queue entry, 20 bytes, RocketMQ's CQ_STORE_UNIT_SIZE:

    +------------------+-----------+------------------------+
    | commitlog offset | unit size | tag: Kafka base offset |
    |      int64       |   int32   |         int64          |
    +------------------+-----------+------------------------+

Time entry, 20 bytes, one per queue entry (a side file, so the queue keeps
RocketMQ's layout):

    +------------------------+--------------------------+---------------------+
    | batch maxTimestamp i64 | running max timestamp i64| lastOffsetDelta i32 |
    +------------------------+--------------------------+---------------------+

New entries wait in memory until `write_pending` (the store calls it with the
commitlog's, once per request; a read calls it first): one pwrite per file
instead of two per batch. The entries are derived data, so none of them needs
to be on disk before an acknowledgement, only before a checkpoint counts them
(store.py).

Both files are SegmentFiles (segment/open_files.py): opened when used and closed when the
broker's bound on open files needs the room, files other than a queue's last first, so 10,000
partitions do not hold 20,000 descriptors. A file closed with entries not yet fsynced is fsynced
first; if that fails, the next checkpoint's `flush` raises it and the store goes offline.

Crash behaviour: either file may end in a torn entry or be behind the other; on
open both are cut to the shorter whole-entry count (a missing file counts as empty).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from segment.open_files import OpenFiles, SegmentFile

ENTRY = struct.Struct(">qiq")
TIME = struct.Struct(">qqi")
ENTRY_SIZE = ENTRY.size  # 20


def _size_on_disk(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


class QueueFile:
    def __init__(self, directory: Path, first_index: int, files: OpenFiles) -> None:
        self.first_index = first_index
        self.path = directory / f"{first_index:020d}"
        self.time_path = self.path.with_name(self.path.name + ".time")
        # Sized without opening them: a store opening 10,000 queues opens none of their files.
        sizes = [_size_on_disk(self.path), _size_on_disk(self.time_path)]
        self.entries = SegmentFile(self.path, files, created=sizes[0] is not None)
        self.times = SegmentFile(self.time_path, files, created=sizes[1] is not None)
        self._pending_entries = bytearray()  # entries written..count-1, not yet in the files
        self._pending_times = bytearray()
        count = min(size or 0 for size in sizes) // ENTRY_SIZE
        self.count = self.written = count
        for f, size in zip((self.entries, self.times), sizes):
            if size is not None and size != count * ENTRY_SIZE:
                f.truncate(count * ENTRY_SIZE)  # a torn entry, or entries the other file lacks

    @staticmethod
    def create_empty(directory: Path, first_index: int) -> None:
        """Make the pair's two files, empty, without keeping a descriptor (the bound holds)."""
        path = directory / f"{first_index:020d}"
        for name in (path, path.with_name(path.name + ".time")):
            os.close(os.open(name, os.O_RDWR | os.O_CREAT, 0o644))

    def set_sealed(self, sealed: bool) -> None:
        """A file no entry is added to any more closes before the last files of queues."""
        for f in (self.entries, self.times):
            f.files.set_sealed(f, sealed)

    def add(self, entry: bytes, time_entry: bytes) -> None:
        self._pending_entries += entry
        self._pending_times += time_entry
        self.count += 1

    def write_pending(self) -> None:
        if self.written == self.count:
            return
        at = self.written * ENTRY_SIZE
        self.entries.write(self._pending_entries, at)
        self.times.write(self._pending_times, at)
        self._pending_entries, self._pending_times = bytearray(), bytearray()
        self.written = self.count

    def set_count(self, count: int) -> None:
        self.write_pending()
        self.count = self.written = count
        for f in (self.entries, self.times):
            if f.size() != count * ENTRY_SIZE:
                f.truncate(count * ENTRY_SIZE)

    def read(self, first: int, n: int) -> list[tuple]:
        """Raw (phys, size, base, max_ts, running_max, last_delta) of entries first .. first+n-1 of this file."""
        if self.written != self.count:
            self.write_pending()
        q, t = self.read_written(first, n)
        return [a + b for a, b in zip(ENTRY.iter_unpack(q), TIME.iter_unpack(t))]

    def read_written(self, first: int, n: int) -> tuple[bytes, bytes]:
        """The queue and time bytes of entries first .. first+n-1 as far as both files hold
        them, whole entries only (safe from another thread: it never writes)."""
        q = self.entries.pread(n * ENTRY_SIZE, first * ENTRY_SIZE)
        t = self.times.pread(n * ENTRY_SIZE, first * ENTRY_SIZE)
        k = min(len(q), len(t)) // ENTRY_SIZE * ENTRY_SIZE
        return q[:k], t[:k]

    def sync(self) -> None:
        """fsync what write_pending wrote (raises what an fsync at eviction kept)."""
        self.entries.sync()
        self.times.sync()

    def close(self) -> None:
        """Stop holding the files open (they reopen if used again)."""
        self.entries.close()
        self.times.close()

    def forget(self) -> None:
        """The queue's directory is being removed: never open these files again."""
        self.entries.forget()
        self.times.forget()

    def unlink(self) -> None:
        self.written = self.count  # what is pending goes with the file
        self.entries.delete()
        self.times.delete()
