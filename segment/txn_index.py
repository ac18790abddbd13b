"""Aborted transactions on disk: Kafka's transaction index (`.txnindex`), for both layouts.

One entry per ABORT marker, in marker order, Kafka's AbortedTxn (34 bytes, big-endian):

    +---------+-------------+--------------+-------------+--------------------+
    | version | producer id | first offset | last offset | last stable offset |
    |  int16  |    int64    |    int64     |    int64    |       int64        |
    +---------+-------------+--------------+-------------+--------------------+
      0         the producer  its transaction's first   the marker's   the partition's LSO when
                              offset (the marker's own   offset         the marker was written,
                              when nothing was open)                    leaving this transaction
                                                                        out: the first offset of
                                                                        the oldest other open
                                                                        one, else marker + 1

The segment layout keeps one file per segment (`<base>.txnindex`, the markers that segment
holds); the commitlog layout one beside each partition's consume queue and one per compacted
generation (docs/storage.md says why). Last offsets strictly increase down a file, so a read
finds its first entry by binary search. The last stable offset lets it stop early, as Kafka's
collectAbortedTxns does: once an entry's is at or past the read's upper bound, every later
marker ends a transaction that began at or after that bound (every transaction open then began
at or after it, every later one after the marker), so none of them overlaps the read.

Only the entry count is kept in memory: reads pread the entries they need (a read_committed
fetch touches a few), so a partition with millions of aborted transactions costs no memory.
A file is created by its first entry: most segments never hold an ABORT marker.

Crash behaviour: entries are appended after the marker they describe, and the file is derived
data. Opening drops a torn last entry; the owning log cuts entries past its recovered end and,
where its recovery re-read batches, rebuilds theirs from the log (txn_replay.py).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from segment.file_io import fsync_dir, pwrite_all
from segment.fsync_count import fsync
from segment.open_files import OpenFiles, SegmentFile

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset
    last_stable_offset: int


def encode(txns: list[AbortedTxn]) -> bytes:
    """Entries as a file holds them (a compacted generation's is written whole)."""
    return b"".join(ENTRY.pack(VERSION, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
                    for t in txns)


class TransactionIndex:
    def __init__(self, path: Path, files: OpenFiles, missing: bool = False) -> None:
        """`missing`: the caller knows there is no file yet (its directory was just made)."""
        self.path = path
        try:
            size = None if missing else path.stat().st_size  # without opening it: a store opens thousands of these
        except FileNotFoundError:
            size = None
        self.file = SegmentFile(path, files, created=size is not None)
        self.count = (size or 0) // ENTRY_SIZE
        if size is not None and size != self.count * ENTRY_SIZE:
            self.file.truncate(self.count * ENTRY_SIZE)  # a torn last entry
        self._last = self.entry(self.count - 1).last_offset if self.count else -1

    def __len__(self) -> int:
        return self.count

    def entry(self, i: int) -> AbortedTxn:
        return self.entries(i, i + 1)[0]

    def entries(self, first: int = 0, stop: int | None = None) -> list[AbortedTxn]:
        """Entries first .. stop-1 (to the end by default)."""
        stop = self.count if stop is None else min(stop, self.count)
        if first >= stop:
            return []
        raw = self.file.pread((stop - first) * ENTRY_SIZE, first * ENTRY_SIZE)
        return [AbortedTxn(pid, first_offset, last, lso) for _v, pid, first_offset, last, lso in ENTRY.iter_unpack(raw)]

    def _first_ending_at_or_after(self, offset: int) -> int:
        lo, hi = 0, self.count
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entry(mid).last_offset >= offset:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def collect(self, start: int, upper: int) -> tuple[list[AbortedTxn], bool]:
        """(entries overlapping [start, upper): marker at or after `start`, first offset before
        `upper`; whether the search is complete, no later file can hold another)."""
        found: list[AbortedTxn] = []
        i = self._first_ending_at_or_after(start)
        while i < self.count:
            chunk = self.entries(i, i + 64)
            for txn in chunk:
                if txn.first_offset < upper:
                    found.append(txn)
                if txn.last_stable_offset >= upper:
                    return found, True
            i += len(chunk)
        return found, False

    # ----- changing -----------------------------------------------------------------

    def append(self, txn: AbortedTxn) -> None:
        """Raises WriteRefused (a full disk) with the index unchanged; ValueError for a marker
        not after the last one (markers are appended in offset order)."""
        if txn.last_offset <= self._last:
            raise ValueError(f"{self.path.name}: aborted transaction ending at {txn.last_offset} "
                             f"after one ending at {self._last}")
        at = self.count * ENTRY_SIZE
        try:
            self.file.write(encode([txn]), at)
        except BaseException:
            self.file.truncate(at)  # a partial entry would be read as a torn one; cut it now
            raise
        self.count += 1
        self._last = txn.last_offset

    def truncate_from(self, offset: int) -> None:
        """Drop the entries whose marker is at or after `offset` (the log was cut there)."""
        keep = self._first_ending_at_or_after(offset)
        if keep < self.count:
            self.file.truncate(keep * ENTRY_SIZE)
            self.count = keep
            self._last = self.entry(keep - 1).last_offset if keep else -1

    def trim_before(self, offset: int) -> None:
        """Drop the entries whose marker is below `offset` (the log start moved past them):
        the rest is written to a new file that replaces this one, so a crash leaves either."""
        drop = self._first_ending_at_or_after(offset)
        if not drop:
            return
        kept = self.file.pread((self.count - drop) * ENTRY_SIZE, drop * ENTRY_SIZE)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            pwrite_all(fd, kept, 0, tmp.name)
            fsync(fd, "txnindex")
        finally:
            os.close(fd)
        files = self.file.files
        self.file.forget()  # the old file's descriptor must not serve the new name
        os.replace(tmp, self.path)
        fsync_dir(self.path.parent)
        self.file = SegmentFile(self.path, files, created=True)
        self.count -= drop

    def reset(self) -> None:
        if self.count or self.file.created:
            self.file.truncate(0)
        self.count, self._last = 0, -1

    def flush(self) -> None:
        self.file.sync()

    def seal(self, sealed: bool = True) -> None:
        self.file.files.set_sealed(self.file, sealed)

    def close(self) -> None:
        self.file.close()

    def forget(self) -> None:
        self.file.forget()

    def delete(self) -> None:
        self.file.delete()
