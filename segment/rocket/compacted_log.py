"""A compacted commitlog partition's own file: its cleaned batches below an offset C.

The shared commitlog cannot be rewritten for one partition, so a clean (log_cleaner.py)
writes what survives of [log start, C) into files of the partition's own, beside its
consume queue, as RocketMQ 5's compaction topic keeps a per-queue compaction log with its
own consume queue. One generation, named by C (20 digits):

    consumequeue/<topic>/<partition>/
        <C>.compacted           the kept record batches v2 of offsets < C, end to end,
                                each exactly as a fetch sends it (offsets unchanged)
        <C>.compacted.entries   one entry per batch, 40 bytes, little-endian int64s:
                                +----------+------+------------+-------------+---------------+
                                | position | size | baseOffset | lastOffset  | maxTimestamp  |
                                +----------+------+------------+-------------+---------------+
        <C>.compacted.keys      an IndexFile (index_file.py): hash of "topic#key" -> position
                                of the batch holding the key's kept record
        <C>.compacted.txnindex  the aborted transactions whose ABORT marker the generation kept
                                (segment/txn_index.py; missing in generations written before)

Offsets below C are served from here, offsets from C on from the consume queue and the
commitlog, so the consume-queue range below C is superseded by this file and the
commitlog files it pointed into are collected once no queue needs them. C is a batch
boundary of the partition (the offset after the last batch a round cleaned).

A generation is written whole into `compacting/` and swapped in by log_cleaner.py, which
describes the crash protocol; once in place the files never change except for a
follower's truncation below C (`truncate`), which cuts the data and entries files (data
first) and renames the generation to its new end. Entries are derived from the data: an
entries file that does not describe the data file exactly is rebuilt from the data at
open, and a keys file that is missing is rebuilt too.

The data file is a SegmentFile (segment/open_files.py): open only while the broker's bound on
open files allows, as the consume queues' files, and a fetch's region of it holds its
descriptor until sent, so a swap deleting this generation never closes it under the send.
"""

from __future__ import annotations

import array
import logging
import os
import sys
from bisect import bisect_left
from pathlib import Path
from typing import Iterator, NamedTuple

from segment.file_io import fsync_dir, pwrite_all
from segment.fsync_count import fsync
from segment.open_files import OpenFiles, SegmentFile
from segment.txn_index import TransactionIndex
from wire import records as wire_records
from wire.record_batch import HEADER_SIZE, parse_header

from .index_file import IndexFile, key_hash

log = logging.getLogger(__name__)

SUFFIX = ".compacted"
ENTRIES = ".entries"
KEYS = ".keys"
TXNS = ".txnindex"
FIELDS = 5  # position, size, baseOffset, lastOffset, maxTimestamp


def data_name(end: int) -> str:
    return f"{end:020d}{SUFFIX}"


def generation_end(name: str) -> int | None:
    """C of a generation's data file name (`<C>.compacted`), None for any other name."""
    stem, dot, rest = name.partition(".")
    return int(stem) if dot and rest == SUFFIX[1:] and stem.isdigit() and len(stem) == 20 else None


class CompactedEntry(NamedTuple):
    base_offset: int
    last_offset: int
    max_timestamp: int
    size: int  # of the batch
    position: int  # in the data file


def _as_little_endian(values: array.array) -> array.array:
    if sys.byteorder == "big":
        values.byteswap()
    return values


def encode_entries(rows: list[tuple[int, int, int, int, int]]) -> bytes:
    return _as_little_endian(array.array("q", [v for row in rows for v in row])).tobytes()


class CompactedLog:
    def __init__(self, directory: Path, topic: str, end: int, files: OpenFiles) -> None:
        self.dir = Path(directory)
        self.topic = topic
        self.end = end
        self.path = self.dir / data_name(end)
        self.size = self.path.stat().st_size
        self.data = SegmentFile(self.path, files, created=True)
        files.set_sealed(self.data, True)  # never appended to: closed before active files
        self._load_entries()
        self._keys: IndexFile | None = None
        self.txns = TransactionIndex(Path(str(self.path) + TXNS), files)

    # ----- entries ------------------------------------------------------------------

    def _load_entries(self) -> None:
        raw = array.array("q")
        try:
            raw.frombytes(Path(str(self.path) + ENTRIES).read_bytes())
        except (OSError, ValueError):
            raw = array.array("q")
        _as_little_endian(raw)
        cols = [raw[i::FIELDS] for i in range(FIELDS)]
        if len(raw) % FIELDS or sum(cols[1]) != self.size or list(cols[0]) != self._contiguous(cols[1]):
            log.warning("%s: entries do not describe the data: rebuilding them", self.path)
            cols = self._scan()
            _write_synced(Path(str(self.path) + ENTRIES), encode_entries(list(zip(*cols))))
        self.positions, self.sizes, self.bases, self.lasts, self.max_ts = cols
        self.running_max = array.array("q", [])
        top = -1
        for ts in self.max_ts:
            top = max(top, ts)
            self.running_max.append(top)

    @staticmethod
    def _contiguous(sizes) -> list[int]:
        out, at = [], 0
        for size in sizes:
            out.append(at)
            at += size
        return out

    def _scan(self) -> list[array.array]:
        """Entries from the data file itself (its batches were fsynced before it was swapped in)."""
        cols = [array.array("q") for _ in range(FIELDS)]
        position = 0
        while position + HEADER_SIZE <= self.size:
            header = parse_header(self.data.pread(HEADER_SIZE, position))
            if position + header.size > self.size:
                break
            for col, value in zip(cols, (position, header.size, header.base_offset, header.last_offset,
                                         header.max_timestamp)):
                col.append(value)
            position += header.size
        if position != self.size:  # only a damaged disk gets here: keep the whole batches
            log.warning("%s: cutting %d bytes that are not whole batches", self.path, self.size - position)
            self.data.truncate(position)
            self.size = position
        return cols

    def __len__(self) -> int:
        return len(self.bases)

    @property
    def first_offset(self) -> int | None:
        return self.bases[0] if len(self.bases) else None

    def entry(self, i: int) -> CompactedEntry:
        return CompactedEntry(self.bases[i], self.lasts[i], self.max_ts[i], self.sizes[i], self.positions[i])

    def find(self, offset: int) -> int:
        """Index of the first batch holding an offset >= `offset` (len(self) if none)."""
        return bisect_left(self.lasts, offset)

    def entries_from(self, offset: int) -> Iterator[CompactedEntry]:
        for i in range(self.find(offset), len(self)):
            yield self.entry(i)

    def first_reaching(self, timestamp_ms: int) -> int:
        """First index whose running max timestamp reaches `timestamp_ms` (len(self) if none)."""
        return bisect_left(self.running_max, timestamp_ms)

    def read(self, entry: CompactedEntry) -> bytes:
        return self.data.pread(entry.size, entry.position)

    # ----- keys ---------------------------------------------------------------------

    def key_candidates(self, key: bytes) -> list[int]:
        """Positions of batches that may hold `key` (hash matches; the caller checks the key)."""
        if self._keys is None:
            path = Path(str(self.path) + KEYS)
            if not path.exists():
                self._rebuild_keys(path)
            self._keys = IndexFile(path)
        return [position for position, _ in self._keys.lookup(key_hash(self.topic, key))]

    def _rebuild_keys(self, path: Path) -> None:
        log.warning("%s: rebuilding its key index", self.path)
        pairs = []
        for i in range(len(self)):
            batch = self.read(self.entry(i))
            pairs += [(key, self.positions[i]) for key in wire_records.record_keys(batch)]
        write_key_index(path.with_name(path.name + ".tmp"), self.topic, pairs)
        os.rename(path.with_name(path.name + ".tmp"), path)

    # ----- changing -----------------------------------------------------------------

    def truncate(self, offset: int) -> CompactedLog:
        """Keep only the batches wholly below `offset` (a follower's truncation below C): the
        data is cut first, then the entries, then the generation renamed to its new end. A
        crash between leaves entries that no longer match the data (rebuilt at open) or the
        old name (an end above the data, so offsets below it and above the data are absent
        until the consume queue, cut by its TRUNCATE unit, serves from the new end)."""
        keep = bisect_left(self.lasts, offset)
        cut = self.positions[keep] if keep < len(self) else self.size
        self.data.truncate(cut)
        self.data.sync()
        rows = [tuple(c[i] for c in (self.positions, self.sizes, self.bases, self.lasts, self.max_ts))
                for i in range(keep)]
        _write_synced(Path(str(self.path) + ENTRIES), encode_entries(rows))
        self.txns.truncate_from(offset)
        self.txns.flush()
        new_end = min(offset, self.end)
        self.close()
        for suffix in (TXNS, ENTRIES, KEYS, ""):  # candidates past the data are rejected by the lookup
            old = Path(str(self.path) + suffix)
            if old.exists():
                os.rename(old, self.dir / (data_name(new_end) + suffix))
        fsync_dir(self.dir)
        return CompactedLog(self.dir, self.topic, new_end, self.data.files)

    def close(self) -> None:
        if self._keys is not None:
            self._keys.close()
            self._keys = None
        self.data.forget()  # never read again: a truncation renames it, a swap deletes it
        self.txns.forget()

    def delete(self) -> None:
        """Remove the generation's files (the data last: until then it is still a generation)."""
        self.close()
        for suffix in (TXNS, KEYS, ENTRIES, ""):
            Path(str(self.path) + suffix).unlink(missing_ok=True)


def write_key_index(path: Path, topic: str, pairs: list[tuple[bytes, int]]) -> None:
    """An IndexFile of (key, position) pairs at `path`, fsynced."""
    path.unlink(missing_ok=True)
    n = max(len(pairs), 1)
    index = IndexFile(path, slots=n, max_entries=n)
    try:
        index.reserve_entries(n)
        for key, position in pairs:
            index.put(key_hash(topic, key), position, 0)
        index.flush()  # msync: on disk before the generation is swapped in
    finally:
        index.close()


def _write_synced(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        pwrite_all(fd, data, 0, path.name)
        fsync(fd, "compacted")
    finally:
        os.close(fd)
