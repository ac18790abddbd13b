"""The commitlog: one sequence of fixed-size files that every partition appends to.

    commitlog/
        00000000000000000000   file 0, `file_size` bytes (sparse: created with ftruncate)
        00000000001073741824   file 1, named by the commitlog offset of its first byte
        ...

A commitlog offset ("phys") is global: file n is named by the sum of the sizes
of the files before it, so phys - name is the position inside the file. Units
(unit_format.py) are laid end to end; when the next unit would not leave
BLANK_MIN_SIZE bytes free in the current file, a BLANK marker pads the file to
its end and the unit goes to the start of a new file:

    +--------+--------+-----+--------+------------------+
    | unit   | unit   | ... | unit   | BLANK (padding)  |  file n
    +--------+--------+-----+--------+------------------+
    +--------+-----
    | unit   | ...                                         file n+1
    +--------+-----

Writes are plain pwrites on an fd the fetch path can sendfile from; nothing is
mapped. Files are created at full size as sparse files, so the bytes after the
write position read as zeros; `append` allocates their blocks (posix_fallocate)
16 MiB ahead of the units, so a full disk refuses the unit being appended
(WriteRefused, nothing changed) instead of failing the write that follows it,
when the request is already answered in memory. Appended units wait in memory and go out as one
pwritev (`write_pending`): the broker calls it once per request, before it
answers, and every read, roll and close calls it first. A produce request for
1000 partitions so costs one system call instead of 1000 (profiled: the
per-unit pwrite was 30% of the broker's time at 1000 partitions). RocketMQ gets
the same from writing into a mapped file; a mapping was slower here, one page
fault per 4 KiB. `write_pos` is where the next unit goes, `written_pos` how far
the file holds them: only what is written is ever fsynced or called durable.

Crash behaviour: the log holds whole units up to some point, then at most one
torn unit, then zeros (or, in a test, the file simply ends). `scan()` walks units
checking size, magic and CRC and stops at the first that does not check out;
`truncate_at()` then zeroes the rest of that file (ftruncate down and back up)
and removes any later file, which cannot hold valid units because writes are
sequential.

Deleted files keep their fd open for a grace period, as in the segment engine,
so fetch responses already holding a region of them can still be sent.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from bisect import bisect_right
from pathlib import Path
from typing import Iterator

from segment.file_io import reserve
from segment.fsync_count import fsync
from segment.log import StorageError, WriteRefused

from . import unit_format as uf

log = logging.getLogger(__name__)

SCAN_CHUNK = 4 * 1024 * 1024
MAX_PENDING_PARTS = 1023  # below Linux's IOV_MAX (1024), what one pwritev takes; a unit adds 1 or 2
MAX_PENDING_BYTES = 4 * 1024 * 1024
RESERVE_CHUNK = 16 * 1024 * 1024


def file_name(offset: int) -> str:
    return f"{offset:020d}"


class UnitTooLarge(StorageError):
    """A unit cannot fit in one commitlog file (raise the file size)."""


class CommitLogFile:
    def __init__(self, path: Path, base: int, capacity: int) -> None:
        self.path = path
        self.base = base
        self.capacity = capacity
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(self.fd).st_size < capacity:
                os.ftruncate(self.fd, capacity)
        except OSError:
            os.close(self.fd)
            raise

    @property
    def end(self) -> int:
        return self.base + self.capacity

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class CommitLog:
    def __init__(self, directory: Path, file_size: int, delete_delay_ms: int = 60_000) -> None:
        self.dir = Path(directory)
        self.delete_delay_s = delete_delay_ms / 1000  # log.segment.delete.delay.ms
        self.dir.mkdir(parents=True, exist_ok=True)
        self.file_size = file_size
        self._lock = threading.Lock()  # guards `files` against flush() in a worker thread
        self._flush_lock = threading.Lock()  # one fsync at a time: a second waits and may find itself covered
        self._retired: list[tuple[float, CommitLogFile]] = []
        self.files: list[CommitLogFile] = []
        bases = sorted(int(p.name) for p in self.dir.iterdir() if p.name.isdigit() and len(p.name) == 20)
        for i, base in enumerate(bases):
            path = self.dir / file_name(base)
            if i + 1 < len(bases):
                capacity = bases[i + 1] - base
            else:
                capacity = max(path.stat().st_size, file_size)
            self.files.append(CommitLogFile(path, base, capacity))
        self.write_pos = self.files[-1].end if self.files else 0  # set by truncate_at() after the scan
        self.written_pos = self.write_pos
        self._reserved = self.write_pos  # blocks allocated up to here in the active file (append)
        self._pending: list = []  # units from written_pos to write_pos, not yet in the file
        self._pending_bytes = 0
        self.flushed_pos = 0

    # ----- geometry ----------------------------------------------------------

    @property
    def min_offset(self) -> int:
        return self.files[0].base if self.files else self.write_pos

    def _file_index(self, phys: int) -> int:
        return bisect_right([f.base for f in self.files], phys) - 1

    def file_at(self, phys: int) -> CommitLogFile | None:
        """The file holding phys, with every appended unit written to it (for reading)."""
        if self._pending:
            self.write_pending()
        i = self._file_index(phys)
        if i < 0 or phys >= self.files[i].end:
            return None
        return self.files[i]

    # ----- writing -----------------------------------------------------------

    def append(self, *parts) -> int:
        """Add one unit (the concatenation of `parts`), rolling to a new file if needed;
        returns its commitlog offset.

        The parts are written by the next write_pending(); they must not change until then.
        Raises WriteRefused, with nothing changed, when the disk has no room for the unit:
        its blocks are allocated here (`reserve`), so the later write cannot fail for room."""
        size = sum(map(len, parts))
        if size + uf.BLANK_MIN_SIZE > self.file_size:
            raise UnitTooLarge(f"a {size}-byte unit does not fit a {self.file_size}-byte commitlog file")
        active = self.files[-1] if self.files else None
        if active is None or self.write_pos + size + uf.BLANK_MIN_SIZE > active.end:
            start = active.end if active is not None else self.write_pos
            fresh = self._new_file(start, size + uf.BLANK_MIN_SIZE)
            self.write_pending()
            if active is not None and self.write_pos < active.end:
                os.pwrite(active.fd, uf.encode_blank(active.end - self.write_pos), self.write_pos - active.base)
            with self._lock:
                self.files.append(fresh)
            active = fresh
            self.write_pos = self.written_pos = start
        else:
            self._reserve(active, self.write_pos + size + uf.BLANK_MIN_SIZE)
        phys = self.write_pos
        self._pending.extend(parts)
        self._pending_bytes += size
        self.write_pos = phys + size
        if len(self._pending) >= MAX_PENDING_PARTS or self._pending_bytes >= MAX_PENDING_BYTES:
            self.write_pending()
        return phys

    def _new_file(self, start: int, first_unit: int) -> CommitLogFile:
        """Create the file that starts at `start` with room for its first unit, or raise
        WriteRefused leaving no file behind."""
        reserved_before = self._reserved
        path = self.dir / file_name(start)
        try:
            fresh = CommitLogFile(path, start, self.file_size)
        except OSError as exc:  # no inode, or a file size limit (EFBIG)
            path.unlink(missing_ok=True)
            raise WriteRefused(f"cannot create commitlog file {path.name}: {exc.strerror or exc}") from exc
        try:
            self._reserved = start
            self._reserve(fresh, start + first_unit)
        except WriteRefused:
            fresh.close()
            fresh.path.unlink(missing_ok=True)
            self._reserved = reserved_before
            raise
        return fresh

    def _reserve(self, f: CommitLogFile, upto: int) -> None:
        """Allocate `f`'s blocks up to commitlog offset `upto`, RESERVE_CHUNK at a time (one
        fallocate per 16 MiB, not per unit; the unused rest of a chunk is what disk use
        overstates)."""
        if upto <= self._reserved:
            return
        end = min(max(upto, self._reserved + RESERVE_CHUNK), f.end)
        reserve(f.fd, self._reserved - f.base, end - self._reserved, f"commitlog file {f.path.name}")
        self._reserved = end

    def write_pending(self) -> None:
        """Write the appended units to the active file in one pwritev. On an OSError they
        stay pending (and unacknowledged: the broker answers only after this returns)."""
        if not self._pending:
            return
        f = self.files[-1]
        at, total = self.written_pos - f.base, self.write_pos - self.written_pos
        done = os.pwritev(f.fd, self._pending, at)
        if done < total:  # short write: finish the rest in one piece
            rest = memoryview(b"".join(self._pending))[done:]
            while rest:
                n = os.pwrite(f.fd, rest, at + done)
                rest, done = rest[n:], done + n
        self._pending, self._pending_bytes = [], 0
        self.written_pos = self.write_pos

    # ----- reading -----------------------------------------------------------

    def read(self, phys: int, size: int) -> bytes:
        f = self.file_at(phys)  # writes what is pending first
        if f is None:
            raise StorageError(f"commitlog offset {phys} is not in any file")
        return os.pread(f.fd, size, phys - f.base)

    def scan(self, start: int) -> Iterator[tuple[int, uf.UnitHeader, memoryview]]:
        """(phys, header, unit bytes) of every valid unit from `start`; sets `scan_end` when done.

        `start` must be a unit boundary (a file start always is). Blank padding is
        followed into the next file. The view is only valid until the next item.
        """
        self.write_pending()
        self.scan_end = start
        i = self._file_index(start)
        if i < 0:
            if not self.files:
                return
            i, start = 0, self.files[0].base
            self.scan_end = start
        pos = start
        while i < len(self.files):
            f = self.files[i]
            buf, buf_at = b"", pos
            while pos < f.end:
                rel = pos - buf_at
                prefix = uf.peek_prefix(buf, rel)
                if prefix is None or (prefix[1] != uf.BLANK and rel + max(prefix[0], uf.FIXED_SIZE) > len(buf)):
                    want = SCAN_CHUNK if prefix is None else max(SCAN_CHUNK, prefix[0])
                    buf, buf_at, rel = os.pread(f.fd, min(want, f.end - pos), pos - f.base), pos, 0
                    prefix = uf.peek_prefix(buf, rel)
                    if prefix is None:
                        return
                total, magic = prefix
                if magic == uf.BLANK:
                    if total != f.end - pos:
                        return
                    pos = f.end
                    break
                header = uf.parse_unit(buf, rel, f.end - pos)
                if header is None:
                    return
                yield pos, header, memoryview(buf)[rel : rel + header.size]
                pos += header.size
                self.scan_end = pos
            if pos < f.end:
                return
            self.scan_end = pos
            i += 1

    # ----- cutting and deleting ----------------------------------------------

    def torn_tail(self, phys: int) -> tuple[int, str | None]:
        """What recovery is about to cut at the valid end `phys`: the bytes written past it (to
        the last non-zero byte of the unit that starts there; files are zero-filled ahead) and
        "topic-partition" of that torn unit, when its fixed header survived."""
        f = self.file_at(phys)
        if f is None:
            return 0, None
        head = os.pread(f.fd, min(uf.FIXED.size + 0xFFFF, f.end - phys), phys - f.base)
        if len(head) < uf.FIXED.size:
            return len(head.rstrip(b"\0")), None
        total, magic, _crc, _base, _time, partition, topic_len = uf.FIXED.unpack_from(head)
        claimed = min(max(total, len(head)), f.end - phys, SCAN_CHUNK)
        written = len(os.pread(f.fd, claimed, phys - f.base).rstrip(b"\0"))
        owner = None
        if magic in (uf.MESSAGE, uf.TRUNCATE, uf.START_AT) and uf.FIXED.size + topic_len <= len(head):
            topic = head[uf.FIXED.size : uf.FIXED.size + topic_len].decode("utf-8", "replace")
            owner = f"{topic}-{partition}"
        return written, owner

    def truncate_at(self, phys: int) -> None:
        """Make `phys` the write position: zero the rest of its file, remove later files."""
        self.write_pending()
        with self._lock:
            while self.files and self.files[-1].base > phys:
                doomed = self.files.pop()
                log.warning("removing commitlog file %s past the valid end %d", doomed.path.name, phys)
                doomed.close()
                doomed.path.unlink(missing_ok=True)
        f = self.file_at(phys)
        if f is not None:
            os.ftruncate(f.fd, phys - f.base)
            os.ftruncate(f.fd, f.capacity)
        self.write_pos = self.written_pos = self._reserved = phys
        self.flushed_pos = min(self.flushed_pos, phys)

    def delete_files_before(self, limit: int) -> int:
        """Delete whole files ending at or before `limit`, never the last one; returns bytes freed."""
        self._close_retired()
        freed = 0
        while len(self.files) > 1 and self.files[0].end <= limit:
            with self._lock:
                f = self.files.pop(0)
            f.path.unlink(missing_ok=True)
            if self.delete_delay_s <= 0:
                f.close()
            else:
                self._retired.append((time.monotonic(), f))
            freed += f.capacity
        return freed

    def _close_retired(self) -> None:
        now = time.monotonic()
        keep = []
        for t, f in self._retired:
            if now - t >= self.delete_delay_s:
                f.close()
            else:
                keep.append((t, f))
        self._retired = keep

    # ----- durability --------------------------------------------------------

    def flush(self) -> int:
        """fsync every file written since the last flush; returns the offset now durable.

        Safe in a worker thread while the event loop appends: it covers what was written
        (written_pos) when it started, never what is still pending. Flushes from several threads
        (the write path's group commit, the periodic flush, a checkpoint) take turns, and one
        that finds an fsync already covered everything written asks the disk for nothing, as
        RocketMQ's GroupCommitService answers a request its last flush passed."""
        with self._flush_lock:
            target = self.written_pos
            if target <= self.flushed_pos:
                return self.flushed_pos
            with self._lock:
                dirty = [f for f in self.files if f.end > self.flushed_pos and f.base < target]
            for f in dirty:
                try:
                    fsync(f.fd, "commitlog")
                except OSError as exc:
                    if exc.errno != errno.EBADF:
                        raise  # the store takes itself offline (store.py)
                    # EBADF: retired and closed meanwhile, nothing in it needs to be durable
            self.flushed_pos = max(self.flushed_pos, target)
            return target

    def close(self) -> None:
        self.write_pending()
        self.flush()
        for f in self.files:
            f.close()
        for _t, f in self._retired:
            f.close()
        self._retired = []
