"""Sparse index files of a log segment: `.index` (offset → position) and `.timeindex`.

    .index      entry = relative offset u32 | position u32               (8 bytes)
    .timeindex  entry = timestamp i64 | relative offset u32              (12 bytes)

Entries are appended in increasing order (offsets strictly, timestamps
non-decreasing), one per `index.interval.bytes` of log appended, so the index
stays small enough to hold in memory as two parallel arrays and search with
bisect; the file is the durable copy.

The arrays are read on first use, as Kafka's LazyIndex opens a segment's index: opening holds
only the entry count (from the file size) and the last entry, which is all a clean open and
appends need. Reading every entry at open made a clean restart grow with the data held
(~4,400 entries a partition at 5,000,000 one-record batches over 32 partitions); a lookup, a
truncation, a recovery or the cleaner reads them then.

The file is a SegmentFile (segment/open_files.py): open only while the store's bound on open files
allows, since reads are answered from the arrays and only appends and cuts touch it.

After a crash the file may hold a torn last entry, entries for log bytes that
were cut off, or be missing: indexes are derived data, so the segment drops a
torn tail here (at open), trims entries past the valid log end, or rebuilds the whole
index from the log when anything does not add up. Entries out of order are garbage, and are
dropped with all after them when the arrays are read.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from pathlib import Path

from segment.open_files import OpenFiles, SegmentFile


class IndexFile:
    """Common machinery; subclasses fix the entry layout and the key."""

    ENTRY: struct.Struct

    def __init__(self, path: Path, base_offset: int, files: OpenFiles, absent: bool = False) -> None:
        """`absent`: the file is known not to exist (a new partition's first segment), so it is
        neither sized nor opened here. Otherwise it is sized with a stat and opened only to read
        its last entry, so a clean start opens no empty index (a start of 50,000 idle partitions
        opened, and evicted, 100,000 of them). A missing one is an empty index either way, made
        by its first write (indexes are derived data)."""
        self.path = path
        self.base_offset = base_offset
        found = None if absent else _size_if_present(path)
        self.file = SegmentFile(path, files, created=found is not None)  # a write to a missing one creates it
        size = found or 0
        self._keys: array | None = None  # None until read (`loaded`)
        self._values: array | None = None
        # While a recovery re-derives the entries (rederive_from .. end_rederive): what the file
        # held, so an append that would write the same entry at the same place writes nothing.
        self._held: tuple[array, array] | None = None
        self._file_count = 0  # entries the file holds meanwhile (old and rewritten)
        self._count = size // self.ENTRY.size
        if size % self.ENTRY.size:
            self.file.truncate(self._count * self.ENTRY.size)  # a torn last entry
        self._last = self._entry_at(self._count - 1) if self._count else None

    def _entry_at(self, i: int) -> tuple[int, int]:
        return next(self._decode(self.file.pread(self.ENTRY.size, i * self.ENTRY.size)))

    @property
    def loaded(self) -> bool:
        return self._keys is not None

    @property
    def keys(self) -> array:
        self._load()
        return self._keys

    @property
    def values(self) -> array:
        self._load()
        return self._values

    def _load(self) -> None:
        if self._keys is not None:
            return
        keys, values = array("q"), array("q")
        raw = self.file.pread(self._count * self.ENTRY.size, 0) if self._count else b""
        for key, value in self._decode(raw):
            if keys and key < keys[-1]:
                break  # out of order: the rest is garbage
            keys.append(key)
            values.append(value)
        self._keys, self._values = keys, values
        if len(keys) != self._count:
            self._cut(len(keys))

    def last_entry(self) -> tuple[int, int] | None:
        """(key, value) of the last entry, without reading the others."""
        return self._last

    def _decode(self, raw: bytes):
        raise NotImplementedError

    def _encode(self, key: int, value: int) -> bytes:
        raise NotImplementedError

    def __len__(self) -> int:
        return self._count

    def append(self, key: int, value: int) -> None:
        """Raises WriteRefused (a full disk) with the index unchanged in memory."""
        i = self._count
        held = self._held
        if held is None or i >= self._file_count or held[0][i] != key or held[1][i] != value:
            self.file.write(self._encode(key, value), i * self.ENTRY.size)
            self._file_count = max(self._file_count, i + 1)
        self._count += 1
        self._last = (key, value)
        if self._keys is not None:
            self._keys.append(key)
            self._values.append(value)

    def floor(self, key: int) -> int | None:
        """Index of the last entry whose key <= key, or None."""
        i = bisect_right(self.keys, key) - 1
        return i if i >= 0 else None

    def truncate_entries(self, count: int) -> None:
        if count == 0:  # a rebuild: nothing to read first
            self._keys, self._values = array("q"), array("q")
        else:
            self._load()
        self._cut(count)

    def _cut(self, count: int) -> None:
        del self._keys[count:]
        del self._values[count:]
        self.file.truncate(count * self.ENTRY.size)
        self._count = len(self._keys)
        self._last = (self._keys[-1], self._values[-1]) if self._count else None

    def rederive_from(self, count: int) -> None:
        """A recovery re-derives the entries from `count` on (appends follow, then end_rederive):
        they go from memory only, and an append writes the file only where it would change it.
        Cutting the file and writing the same entries back cost a crash recovery an ftruncate
        and a write per index of every partition: 61 % of a 10,000-partition start (py-spy)."""
        self._load()
        self._held = (array("q", self._keys), array("q", self._values))
        self._file_count = self._count
        del self._keys[count:]
        del self._values[count:]
        self._count = len(self._keys)
        self._last = (self._keys[-1], self._values[-1]) if self._count else None

    def end_rederive(self) -> None:
        """Cut the file to the entries re-derived, if it holds more."""
        self._held = None
        if self._file_count > self._count:
            self.file.truncate(self._count * self.ENTRY.size)
        self._file_count = self._count

    def reset(self) -> None:
        self.truncate_entries(0)

    def close(self) -> None:
        self.file.close()

    def delete(self) -> None:
        self.file.delete()


def _size_if_present(path: Path) -> int | None:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return None


class OffsetIndex(IndexFile):
    """Absolute offset → byte position of the batch that starts at or covers it."""

    ENTRY = struct.Struct(">II")

    def _decode(self, raw: bytes):
        for rel, pos in self.ENTRY.iter_unpack(raw):
            yield self.base_offset + rel, pos

    def _encode(self, key: int, value: int) -> bytes:
        return self.ENTRY.pack(key - self.base_offset, value)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the closest entry at or below offset; (base, 0) if none."""
        i = self.floor(offset)
        if i is None:
            return self.base_offset, 0
        return self.keys[i], self.values[i]


class TimeIndex(IndexFile):
    """Max timestamp seen so far → offset of the batch where it was first reached."""

    ENTRY = struct.Struct(">qI")

    def _decode(self, raw: bytes):
        for ts, rel in self.ENTRY.iter_unpack(raw):
            yield ts, self.base_offset + rel

    def _encode(self, key: int, value: int) -> bytes:
        return self.ENTRY.pack(key, value - self.base_offset)

    def first_at_or_after(self, timestamp: int) -> int | None:
        """Offset from which to scan for the first timestamp >= target: the entry before it."""
        i = bisect_right(self.keys, timestamp - 1) - 1
        if i < 0:
            return self.base_offset
        return self.values[i]

    @property
    def last_timestamp(self) -> int:
        return self._last[0] if self._last else -1
