"""One log segment: `<20-digit base offset>.log` plus its `.index`, `.timeindex` and `.txnindex`.

The `.log` file is record batches v2 laid end to end, exactly as producers
sent them except for the baseOffset and partitionLeaderEpoch the broker wrote:

    +---------------------+---------------------+-----+
    | batch (base offset) | batch               | ... |
    +---------------------+---------------------+-----+
    0                     position of batch 2

Every `index.interval.bytes` appended, the offset index gets (base offset of
the batch, its position) and the time index (max timestamp so far, that
batch's base offset) if the max timestamp grew. The `.txnindex` (segment/txn_index.py) holds
the aborted transactions whose ABORT marker is in this segment; the partition log appends to it
and rebuilds it, since its entries need the transactions open before the segment began.

Crash behaviour: appends are a single pwrite at the end, so after a crash the
file ends in whole batches followed by at most one torn batch (or, without
fsync, by zeros or stale bytes). `recover()` walks the file checking each
batch's length, magic, offset order and CRC32C, cuts the file at the first bad
one, and rebuilds both offset and time indexes from what remains; the partition log cuts the
`.txnindex` to what remains.

The four files are SegmentFiles (segment/open_files.py): opened when used, closed when the store's
bound on open files needs the room, and reopened on the next use.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from pathlib import Path

from wire.record_batch import HEADER_SIZE, LOG_OVERHEAD, MAGIC, BatchHeader, crc_matches, parse_header

from segment.log import FileRegion, LogOffline, WriteRefused

from .index_file import OffsetIndex, TimeIndex
from segment.open_files import OpenFiles, SegmentFile
from segment.sync_together import sync_together
from segment.txn_index import TransactionIndex

SCAN_CHUNK = 8 * 1024 * 1024
# Smaller reads are handed up as bytes rather than as a file region: the transport would pread
# them anyway (it sendfiles from 64 KiB, broker/net/answer_writer.py), and a region holds its file's
# descriptor open until sent, so a Fetch over thousands of partitions would hold thousands.
INLINE_READ_BYTES = 64 * 1024
MIN_BATCH = HEADER_SIZE


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class LogSegment:
    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int, created_ms: int,
                 files: OpenFiles, made_empty: bool = False) -> None:
        """`made_empty`: the first segment of a partition whose directory was just made: its
        `.log` is created here, empty, and closed at once (the store's bound on open files
        holds); nothing is listed, sized or kept open. Creating it now, in the admin worker,
        spares the first produce, on the event loop, from creating it. The indexes are made by
        their first entry, once `index.interval.bytes` are appended (Kafka's lazy indexes), so
        an idle or small partition is a directory and one file: at 50,000 partitions the
        kernel making inodes was most of a segment topic's creation (bench/README.md)."""
        self.base_offset = base_offset
        self.index_interval = index_interval_bytes
        stem = directory / segment_name(base_offset)
        self.log_path = stem.with_suffix(".log")
        index_path, time_index_path = stem.with_suffix(".index"), stem.with_suffix(".timeindex")
        if made_empty:
            os.close(os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        self.log = SegmentFile(self.log_path, files, created=made_empty)
        self.index = OffsetIndex(index_path, base_offset, files, absent=made_empty)
        self.time_index = TimeIndex(time_index_path, base_offset, files, absent=made_empty)
        self.txn_index = TransactionIndex(stem.with_suffix(".txnindex"), files, missing=made_empty)
        self.size = 0 if made_empty else self._size_on_disk()
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.first_batch_timestamp: int | None = None
        self.created_ms = created_ms
        self._since_index = 0
        self.scanned_from = base_offset  # where the last recover() began validating

    def _size_on_disk(self) -> int:
        """The `.log`'s size by a stat, so that a start does not open it (the first read or
        write will); one not there yet (a roll's new segment) is created now."""
        try:
            return os.stat(self.log_path).st_size
        except FileNotFoundError:
            return self.log.size()

    # ----- reading headers -------------------------------------------------

    def header_at(self, position: int) -> BatchHeader | None:
        if position + HEADER_SIZE > self.size:
            return None
        return parse_header(self.log.pread(HEADER_SIZE, position))

    def headers_from(self, position: int):
        """(position, header) of each batch from `position` to the end, reading headers only."""
        if position + HEADER_SIZE > self.size:
            return  # none: the file is not opened (a clean start of an empty segment)
        handle = self.log.handle()  # held by this frame: the fd stays this file's while it walks
        while position + HEADER_SIZE <= self.size:
            header = parse_header(os.pread(handle.fd, HEADER_SIZE, position))
            yield position, header
            position += header.size

    def pread(self, size: int, position: int) -> bytes:
        return self.log.pread(size, position)

    def region(self, position: int, size: int) -> FileRegion | bytes:
        """Bytes of the .log to send: the bytes themselves when small, else a region for sendfile
        that keeps the descriptor open until it is sent."""
        if size < INLINE_READ_BYTES:
            return self.log.pread(size, position)
        handle = self.log.handle()
        return FileRegion(handle.fd, position, size, handle)

    def position_of(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The batch containing `offset` (or the first one after it), via the index and a short scan."""
        _, position = self.index.lookup(offset)
        for pos, header in self.headers_from(position):
            if header.last_offset >= offset:
                return pos, header
        return None

    def end_of_whole_batches(self, start: int, limit: int, upper_bound: int) -> int:
        """Where the run of whole batches from `start` (a batch boundary) ends if it may reach
        neither past byte position `limit` nor the batch holding `upper_bound`. The end is found
        from the offset index and a scan of at most one index interval, so a read costs the
        same for 20 batches or 400,000 (walking every header held the event loop 0.9 s for one
        fetch of 28 MB of 140-byte batches)."""
        stop = min(self.size, limit)
        if upper_bound < self.next_offset:
            found = self.position_of(upper_bound)
            if found is not None:
                stop = min(stop, found[0])
        i = bisect_right(self.index.values, stop) - 1
        end = max(start, self.index.values[i]) if i >= 0 else start
        for pos, header in self.headers_from(end):
            if pos + header.size > stop:
                break
            end = pos + header.size
        return end

    # ----- writing ---------------------------------------------------------

    def append(self, batch, header: BatchHeader) -> int:
        """Write one batch whose header already carries its offsets; returns its position.

        All or nothing: when the disk is full the bytes that did get written are cut off
        again and WriteRefused leaves the segment as it was (a short write used to be counted
        as written: acknowledged batches the file did not hold). If the cut itself fails the
        segment's tail is unknown: LogOffline."""
        position = self.size
        before = (self.next_offset, self.max_timestamp, self.offset_of_max_timestamp,
                  self.first_batch_timestamp, self._since_index, len(self.index), len(self.time_index))
        try:
            self.log.write(batch, position)
            self._track(position, header, len(batch))
        except WriteRefused:
            self._undo_append(position, before)
            raise
        self.size += len(batch)
        return position

    def _undo_append(self, position: int, before: tuple) -> None:
        (self.next_offset, self.max_timestamp, self.offset_of_max_timestamp,
         self.first_batch_timestamp, self._since_index, index_len, time_len) = before
        try:
            self.log.truncate(position)
            if len(self.index) > index_len:
                self.index.truncate_entries(index_len)
            if len(self.time_index) > time_len:
                self.time_index.truncate_entries(time_len)
        except OSError as exc:
            raise LogOffline(f"{self.log_path}: cannot cut a failed write back to {position}: {exc}") from exc

    def _track(self, position: int, header: BatchHeader, size: int) -> None:
        if self.first_batch_timestamp is None:
            self.first_batch_timestamp = header.max_timestamp
        grew = header.max_timestamp > self.max_timestamp
        if grew:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.base_offset
        if self._since_index >= self.index_interval:  # none for the first batch: a lookup below
            # the first entry starts at the segment's start, as it would from an entry there
            if not len(self.index) or self.index.last_entry()[0] < header.base_offset:
                self.index.append(header.base_offset, position)
            if self.max_timestamp > self.time_index.last_timestamp:
                self.time_index.append(self.max_timestamp, self.offset_of_max_timestamp)
            self._since_index = 0
        self._since_index += size
        self.next_offset = header.last_offset + 1

    # ----- opening and recovery ---------------------------------------------

    def load(self) -> None:
        """Open after a clean shutdown: trust the files, rescan from the last index entry.

        Only the indexes' last entries are read (index_file.py reads the rest on first use); a
        last offset-index entry that does not name the batch at its position means the index
        is not to be trusted, and the segment is recovered (its indexes rebuilt) instead."""
        key, position = self.index.last_entry() or (self.base_offset, 0)
        if position:
            header = self.header_at(position)
            if header is None or header.base_offset != key or header.magic != MAGIC:
                self.recover()
                return
        if len(self.time_index):
            self.max_timestamp, self.offset_of_max_timestamp = self.time_index.last_entry()
        first = self.header_at(0)
        if first is not None:
            self.first_batch_timestamp = first.max_timestamp
        end = position
        for pos, header in self.headers_from(position):
            if pos + header.size > self.size:
                break
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp = header.max_timestamp
                self.offset_of_max_timestamp = header.base_offset
            self.next_offset = header.last_offset + 1
            end = pos + header.size
        if end != self.size or (self.size and self.next_offset == self.base_offset):
            self.recover()

    def recover(self, recovery_point: int = -1) -> int:
        """Validate every batch from the recovery point on, cut the file after the last good
        one, rebuild the indexes past it. Returns the number of bytes cut.

        The batches below `recovery_point` were fsynced, and so were the index entries written
        for them: those are trusted as Kafka trusts whole segments below it, and the scan starts
        at the last offset-index entry before it (`scanned_from` is that batch's offset), so a
        kill -9 re-reads the unflushed tail, not the whole segment. The time index's entries
        up to that batch cover every batch before it: an entry is written with each offset-index
        entry whose batch raised the maximum.
        """
        start, self.scanned_from = self._trusted_prefix(recovery_point)
        self.index.rederive_from(self.index.floor(self.scanned_from) + 1 if start else 0)
        self.time_index.rederive_from(bisect_right(self.time_index.values, self.scanned_from) if start else 0)
        self.next_offset = self.base_offset
        self.max_timestamp = self.offset_of_max_timestamp = -1
        if len(self.time_index):
            self.max_timestamp, self.offset_of_max_timestamp = self.time_index.keys[-1], self.time_index.values[-1]
        first = self.header_at(0) if start else None
        self.first_batch_timestamp = first.max_timestamp if first is not None else None
        self._since_index = 0
        file_size = self.log.size()
        self.size = start
        try:
            valid_end = self._scan_valid(file_size, start, self.scanned_from)
        finally:
            self.index.end_rederive()
            self.time_index.end_rederive()
        if valid_end < file_size:
            self.log.truncate(valid_end)
        self.size = valid_end
        return file_size - valid_end

    def _trusted_prefix(self, recovery_point: int) -> tuple[int, int]:
        """(position, base offset) of the last indexed batch below the recovery point, where the
        scan may start; (0, base offset) when there is none or the entry does not name a batch."""
        i = self.index.floor(recovery_point - 1) if recovery_point > self.base_offset else None
        if i is None or self.index.values[i] == 0:  # nothing to skip (older files index position 0)
            return 0, self.base_offset
        key, position = self.index.keys[i], self.index.values[i]
        header = self.header_at(position) if position + HEADER_SIZE <= self.log.size() else None
        if header is None or header.base_offset != key or header.magic != MAGIC:
            return 0, self.base_offset
        return position, key

    def _scan_valid(self, file_size: int, position: int, expected: int) -> int:
        buf, buf_start = b"", 0
        while position + MIN_BATCH <= file_size:
            rel = position - buf_start
            if rel + LOG_OVERHEAD > len(buf):
                buf, buf_start, rel = self.log.pread(SCAN_CHUNK, position), position, 0
            header = parse_header(buf, rel) if rel + HEADER_SIZE <= len(buf) else None
            if header is None or header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
                break
            if position + header.size > file_size:
                break
            if rel + header.size > len(buf):
                buf, buf_start, rel = self.log.pread(max(SCAN_CHUNK, header.size), position), position, 0
            if header.magic != MAGIC or header.base_offset < expected or header.last_offset_delta < 0:
                break
            if not crc_matches(buf, rel, header.size):
                break
            self.size = position
            self._track(position, header, header.size)
            self.size = position + header.size
            expected = header.last_offset + 1
            position += header.size
        return position

    # ----- truncation, flushing, removal --------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding an offset >= offset (the batch containing it too, as Kafka does)."""
        cut = None
        for pos, header in self.headers_from(0 if not len(self.index) else self.index.lookup(offset)[1]):
            if header.last_offset >= offset:
                cut = pos
                break
        if cut is None:
            return 0
        removed = self.size - cut
        self.log.truncate(cut)
        self.recover()
        self.txn_index.truncate_from(offset)
        return removed

    def flush(self) -> None:
        """fsync the files, together (sync_together.py); OSError if one (or an fsync when one
        was closed idle) failed."""
        sync_together([self.log, self.index.file, self.time_index.file, self.txn_index.file])

    def sync_log(self) -> None:
        """flush() of the `.log` alone (SegmentPartitionLog.sync_log)."""
        sync_together([self.log])

    def seal(self, sealed: bool = True) -> None:
        """No more appends (or, after a truncation, appends again): sealed segments' files are
        the first the store closes."""
        for f in (self.log, self.index.file, self.time_index.file, self.txn_index.file):
            f.files.set_sealed(f, sealed)

    def close(self) -> None:
        self.index.close()
        self.time_index.close()
        self.txn_index.close()
        self.log.close()

    def delete(self) -> None:
        """Remove the files. Regions already read from the .log keep its descriptor until sent."""
        self.index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        self.log.delete()
