"""RocketMQ's IndexFile: a hash table on disk from record key to commitlog offset.

    index/
        00000000000000004711   named by the commitlog offset of the unit that opened it
        00000000000983451136   a new file when the previous one is full

One file (all big-endian), sparse at creation, mapped into memory. Only its
blocks that are allocated (posix_fallocate: the header and slots at creation,
entries a chunk ahead of use) are ever stored into, so a full disk refuses the
append instead of killing the process with SIGBUS:

    +---------------------------------------------------------------------------+
    | header, 40 bytes                                                          |
    |   beginTimestamp i64 | endTimestamp i64 | beginPhysOffset i64 |           |
    |   endPhysOffset i64  | hashSlotCount i32 | indexCount i32                 |
    +---------------------------------------------------------------------------+
    | hashSlotCount slots of 4 bytes: number of the newest entry in the slot   |
    |                                 (0 = empty)                               |
    +---------------------------------------------------------------------------+
    | up to maxIndexCount entries of 20 bytes, numbered from 1:                 |
    |   keyHash i32 | commitlog offset i64 | timeDiff i32 | previous entry i32  |
    +---------------------------------------------------------------------------+

Entry k sits at 40 + 4 * hashSlotCount + 20 * (k - 1); timeDiff is the unit's
store time minus beginTimestamp, in seconds as in RocketMQ. A slot heads a chain
through `previous entry` of every entry whose hash falls in that slot, newest
first; a lookup walks it and keeps entries whose full hash matches. Different
keys can still share a hash, so hits are only candidates: the store reads each
one back from the commitlog and compares the real key (RocketMQ skips this and
returns other keys' messages on a collision).

The key hash covers "topic#key" as RocketMQ's buildKey does, so equal keys of
different topics do not share chains.

Crash behaviour: the mapping is written back by the kernel in no particular
order, so after a crash slots may point at entries that never reached disk.
Recovery keeps the entries the checkpoint counted (they were flushed before it
was written), puts every slot back as it was then (`truncate`), removes newer index
files, and re-dispatches the rest from the commitlog. Entries left pointing at
units that were later cut are filtered by the read-back check.
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from array import array
from pathlib import Path

import crc32c

from segment.file_io import reserve
from segment.log import WriteRefused

HEADER = struct.Struct(">qqqqii")
HEADER_SIZE = HEADER.size  # 40
SLOT = struct.Struct(">i")
ENTRY = struct.Struct(">iqii")
ENTRY_SIZE = ENTRY.size  # 20
RESERVE_CHUNK = 1024 * 1024


def key_hash(topic: str, key: bytes) -> int:
    return crc32c.crc32c(topic.encode() + b"#" + key) & 0x7FFFFFFF


class IndexFile:
    def __init__(self, path: Path, slots: int = 0, max_entries: int = 0) -> None:
        """Open `path`, or create it with `slots` and `max_entries` if it does not exist."""
        self.path = Path(path)
        exists = self.path.exists()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not exists or os.fstat(self._fd).st_size < HEADER_SIZE:
                os.ftruncate(self._fd, HEADER_SIZE + 4 * slots + ENTRY_SIZE * max_entries)
                reserve(self._fd, 0, HEADER_SIZE + 4 * slots, f"index file {self.path.name}")
                os.pwrite(self._fd, HEADER.pack(0, 0, 0, 0, slots, 0), 0)
            size = os.fstat(self._fd).st_size
            (self.begin_ts, self.end_ts, self.begin_phys, self.end_phys, self.slots, self.count) = HEADER.unpack(
                os.pread(self._fd, HEADER_SIZE, 0))
            self.entries_at = HEADER_SIZE + 4 * self.slots
            self.max_entries = (size - self.entries_at) // ENTRY_SIZE
            self.count = max(0, min(self.count, self.max_entries))
            # A file from before reservations may be sparse: a store into a hole of the
            # mapping on a full disk is a SIGBUS, so its blocks are allocated before mapping.
            self._reserved_to = self._entry_pos(self.count + 1)
            reserve(self._fd, 0, self._reserved_to, f"index file {self.path.name}")
        except (OSError, WriteRefused):
            os.close(self._fd)
            if not exists:
                self.path.unlink(missing_ok=True)
            raise
        self._map = mmap.mmap(self._fd, size)

    def reserve_entries(self, n: int) -> None:
        """Allocate room for `n` more entries (a chunk at a time), or raise WriteRefused: the
        mapping is only ever written where blocks exist."""
        want = self._entry_pos(min(self.count + n, self.max_entries) + 1)
        if want <= self._reserved_to:
            return
        end = min(max(want, self._reserved_to + RESERVE_CHUNK), self._entry_pos(self.max_entries + 1))
        reserve(self._fd, self._reserved_to, end - self._reserved_to, f"index file {self.path.name}")
        self._reserved_to = end

    @property
    def full(self) -> bool:
        return self.count >= self.max_entries

    def _slot_pos(self, hash_: int) -> int:
        return HEADER_SIZE + 4 * (hash_ % self.slots)

    def _entry_pos(self, number: int) -> int:
        return self.entries_at + ENTRY_SIZE * (number - 1)

    def put(self, hash_: int, phys: int, store_time_ms: int) -> bool:
        """Add one key occurrence; False if the file is full."""
        if self.full:
            return False
        if self.count == 0:
            self.begin_ts, self.begin_phys = store_time_ms, phys
        number = self.count + 1
        slot_pos = self._slot_pos(hash_)
        (prev,) = SLOT.unpack_from(self._map, slot_pos)
        if prev < 0 or prev > self.count:
            prev = 0  # a slot written back without its entries: the chain starts here
        diff = max(0, min((store_time_ms - self.begin_ts) // 1000, 0x7FFFFFFF))
        ENTRY.pack_into(self._map, self._entry_pos(number), hash_, phys, diff, prev)
        SLOT.pack_into(self._map, slot_pos, number)
        self.count = number
        self.end_ts, self.end_phys = max(self.end_ts, store_time_ms), phys
        self._write_header()
        return True

    def _write_header(self) -> None:
        HEADER.pack_into(
            self._map, 0, self.begin_ts, self.end_ts, self.begin_phys, self.end_phys, self.slots, self.count
        )

    def lookup(self, hash_: int) -> list[tuple[int, int]]:
        """(commitlog offset, store time in ms, to the second) of entries with this hash, newest first."""
        out = []
        (number,) = SLOT.unpack_from(self._map, self._slot_pos(hash_))
        while 0 < number <= self.count:
            h, phys, diff, prev = ENTRY.unpack_from(self._map, self._entry_pos(number))
            if h == hash_:
                out.append((phys, self.begin_ts + diff * 1000))
            if prev >= number:
                break  # chains only point backwards; anything else is damage
            number = prev
        return out

    def entries(self) -> list[tuple[int, int, int, int]]:
        """(hash, phys, timeDiff, prev) of every entry in order (for tests and recovery)."""
        return list(ENTRY.iter_unpack(self._map[self.entries_at : self._entry_pos(self.count + 1)]))

    def truncate(self, count: int) -> None:
        """Keep entries 1..count: each slot goes back to the entry it named when the count was
        `count`, by undoing the entries past it newest first (a slot naming one took over from
        its `prev`), so a crash's recovery costs the entries appended since the checkpoint. A
        slot still naming an entry past `count` afterwards was written back without its entry
        (the kernel writes the mapping in no order): then every slot is rebuilt from the
        entries kept."""
        count = max(0, min(count, self.count))
        for number in range(self.count, count, -1):
            h, _phys, _diff, prev = ENTRY.unpack_from(self._map, self._entry_pos(number))
            pos = self._slot_pos(h)
            if SLOT.unpack_from(self._map, pos)[0] == number:
                SLOT.pack_into(self._map, pos, prev if 0 <= prev < number else 0)
        slots = array("i", self._map[HEADER_SIZE : self.entries_at])
        if sys.byteorder == "little":
            slots.byteswap()
        if max(slots, default=0) > count:
            self._map[HEADER_SIZE : self.entries_at] = bytes(self.entries_at - HEADER_SIZE)
            for number, (h, _phys, _diff, _prev) in enumerate(self.entries()[:count], 1):
                SLOT.pack_into(self._map, self._slot_pos(h), number)
        if count:
            self.end_phys = ENTRY.unpack_from(self._map, self._entry_pos(count))[1]
        end = self._entry_pos(self.count + 1)
        start = self._entry_pos(count + 1)
        self._map[start:end] = bytes(end - start)
        self.count = count
        if count == 0:
            self.begin_ts = self.end_ts = self.begin_phys = self.end_phys = 0
        self._write_header()

    def flush(self) -> None:
        self._map.flush()

    def close(self) -> None:
        if self._fd >= 0:
            self._map.flush()
            self._map.close()
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)


class IndexService:
    """Every index file of the store, newest last; keys go to the newest."""

    def __init__(self, directory: Path, slots: int, max_entries: int) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.slots, self.max_entries = slots, max_entries
        names = sorted(p.name for p in self.dir.iterdir() if p.name.isdigit())
        self.files = [IndexFile(self.dir / n) for n in names]

    def reserve(self, keys: int, next_phys: int) -> None:
        """Make room for up to `keys` more keys before the unit holding them is appended
        (rolling to a new file now if the newest cannot take them), or raise WriteRefused
        with nothing changed."""
        active = self.files[-1] if self.files else None
        if active is None or active.count + keys > active.max_entries:
            active = self._roll(next_phys)
        active.reserve_entries(keys)

    def _roll(self, phys: int) -> IndexFile:
        name = f"{phys:020d}"
        if self.files and self.files[-1].path.name >= name:
            name = f"{int(self.files[-1].path.name) + 1:020d}"
        active = IndexFile(self.dir / name, self.slots, self.max_entries)
        self.files.append(active)
        return active

    def put(self, topic: str, key: bytes, phys: int, store_time_ms: int) -> None:
        hash_ = key_hash(topic, key)
        active = self.files[-1] if self.files else None
        if active is None or active.full:
            active = self._roll(phys)
            active.reserve_entries(1)
        active.put(hash_, phys, store_time_ms)

    def lookup(self, topic: str, key: bytes) -> list[tuple[int, int]]:
        """Candidate (commitlog offset, store time) pairs for the key, newest first, without repeats."""
        hash_ = key_hash(topic, key)
        seen, out = set(), []
        for f in reversed(self.files):
            for phys, ts in f.lookup(hash_):
                if phys not in seen:
                    seen.add(phys)
                    out.append((phys, ts))
        return out

    def position(self) -> tuple[str | None, int]:
        """(newest file name, its entry count) for the checkpoint."""
        if not self.files:
            return None, 0
        return self.files[-1].path.name, self.files[-1].count

    def recover_to(self, name: str | None, count: int) -> None:
        """Forget everything past a checkpointed position: newer files go, that file is cut to `count`."""
        while self.files and (name is None or self.files[-1].path.name > name):
            self.files.pop().delete()
        if self.files and self.files[-1].path.name == name:
            self.files[-1].truncate(count)

    def delete_files_before(self, phys: int) -> None:
        """Drop whole files whose every entry points below `phys` (that commitlog is gone)."""
        while len(self.files) > 1 and self.files[0].end_phys < phys:
            self.files.pop(0).delete()

    def flush(self) -> None:
        for f in list(self.files):
            try:
                f.flush()
            except ValueError:
                pass  # closed meanwhile (an OSError, a failed msync, takes the store offline)

    def close(self) -> None:
        for f in self.files:
            f.close()
