"""Producer-state snapshots: a partition's producer state as of one offset, so a restart
replays only the log past it (Kafka's `<offset>.snapshot`, ProducerStateManager).

A snapshot lives in the partition's own directory (PartitionLog.state_dir), named by the
offset it describes: `00000000000000041230.snapshot` holds the state after replaying every
batch below offset 41230. Layout, big-endian:

    +-------+---------+-----------+----------+
    | magic | version | crc32c    | body ... |      magic b"TLPS", version 1,
    | 4     | 2       | 4 of body |          |      crc32c of every byte after it
    +-------+---------+-----------+----------+
    body:
    +--------+-----------+--------------+
    | offset | producers | unreplicated |           8, 4, 4: counts of what follows
    +--------+-----------+--------------+
    per producer:
    +-------------+-------+-------------------+--------------------+---------+
    | producer id | epoch | coordinator epoch | txn first offset   | batches |  8, 2, 4, 8 (-1: none), 1
    +-------------+-------+-------------------+--------------------+---------+
      per remembered batch (at most 5, oldest first):
      +-----------+----------+--------------+-------------+-----------+
      | first seq | last seq | first offset | last offset | timestamp |      4, 4, 8, 8, 8
      +-----------+----------+--------------+-------------+-----------+
    per completed transaction whose marker was not yet below the high watermark:
    +-------------+--------------+-------------+
    | producer id | first offset | last offset |                             8, 8, 8
    +-------------+--------------+-------------+

Crash behaviour: a snapshot is written to `<name>.tmp`, made durable and renamed into place, so
a file with the final name is whole unless the disk lost it (the broker's rounds write every
snapshot of the round, sync their filesystem once, then rename them: write_round); a torn, truncated or corrupt one
(wrong magic, version, CRC or length) is ignored and the next older one is tried, then the
log from its start. A snapshot past the log end (the log lost its tail in a crash, or a
follower truncated it) describes batches the log no longer holds: it is deleted when found.
Truncation deletes the snapshots past the cut (and fsyncs the directory) before the log can
grow back over their offsets; a write that raced the truncation is dropped, not renamed
(`generation`). The two newest snapshots are kept: the newest may be the one a crash tore.
Only truncation's deletes must be durable; a write's rename may be lost with no harm.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

import crc32c

from segment.file_io import fsync_dir
from segment.fsync_count import fsync, syncfs

log = logging.getLogger(__name__)

SUFFIX = ".snapshot"
MAGIC = b"TLPS"
VERSION = 1
KEEP = 2

_HEAD = struct.Struct(">4sHI")
_BODY = struct.Struct(">qII")
_PRODUCER = struct.Struct(">qhiqB")
_BATCH = struct.Struct(">iiqqq")
_COMPLETED = struct.Struct(">qqq")


@dataclass(frozen=True, slots=True)
class ProducerRecord:
    """One producer as a snapshot holds it; batches are (first seq, last seq, first offset,
    last offset, timestamp), oldest first."""
    producer_id: int
    epoch: int
    coordinator_epoch: int
    txn_first_offset: int  # -1: no open transaction
    batches: tuple[tuple[int, int, int, int, int], ...]


@dataclass(frozen=True, slots=True)
class Snapshot:
    offset: int
    producers: tuple[ProducerRecord, ...]
    unreplicated: tuple[tuple[int, int, int], ...]  # (producer id, first offset, marker offset)


class CorruptSnapshot(Exception):
    pass


def encode(snap: Snapshot) -> bytes:
    parts = [_BODY.pack(snap.offset, len(snap.producers), len(snap.unreplicated))]
    for p in snap.producers:
        parts.append(_PRODUCER.pack(p.producer_id, p.epoch, p.coordinator_epoch, p.txn_first_offset, len(p.batches)))
        parts.extend(_BATCH.pack(*b) for b in p.batches)
    parts.extend(_COMPLETED.pack(*c) for c in snap.unreplicated)
    body = b"".join(parts)
    return _HEAD.pack(MAGIC, VERSION, crc32c.crc32c(body)) + body


def decode(data: bytes) -> Snapshot:
    """Raises CorruptSnapshot for anything but one whole snapshot."""
    try:
        magic, version, crc = _HEAD.unpack_from(data, 0)
        if magic != MAGIC or version != VERSION:
            raise CorruptSnapshot(f"magic {magic!r} version {version}")
        body = memoryview(data)[_HEAD.size:]
        if crc32c.crc32c(body) != crc:
            raise CorruptSnapshot("CRC32C mismatch")
        offset, n_producers, n_completed = _BODY.unpack_from(body, 0)
        pos = _BODY.size
        producers = []
        for _ in range(n_producers):
            pid, epoch, coord, txn_first, n_batches = _PRODUCER.unpack_from(body, pos)
            pos += _PRODUCER.size
            batches = tuple(_BATCH.unpack_from(body, pos + i * _BATCH.size) for i in range(n_batches))
            pos += n_batches * _BATCH.size
            producers.append(ProducerRecord(pid, epoch, coord, txn_first, batches))
        completed = tuple(_COMPLETED.unpack_from(body, pos + i * _COMPLETED.size) for i in range(n_completed))
        pos += n_completed * _COMPLETED.size
    except struct.error as exc:
        raise CorruptSnapshot(f"cut short: {exc}") from exc
    if pos != len(body):
        raise CorruptSnapshot(f"{len(body) - pos} bytes past the last entry")
    return Snapshot(offset, tuple(producers), completed)


def snapshot_name(offset: int) -> str:
    return f"{offset:020d}{SUFFIX}"


class ProducerSnapshots:
    """The snapshot files of one partition's directory. Writes run in a worker thread; the
    truncations and reads on the event loop. The directory is listed once (at the first read,
    or the first change if none came before) and its snapshots then kept in memory: they
    change only through this object. A listing per partition at every write and three at
    every open held the event loop during the opens of thousands of partitions."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self._lock = threading.Lock()  # a write's rename against a truncation's deletes
        self._generation = 0  # bumped by each truncation: a write begun before it is dropped
        self._known: list[int] | None = None  # the snapshot offsets present, oldest first, once listed

    def offsets(self) -> list[int]:
        """Offsets of the snapshot files present, oldest first."""
        with self._lock:
            return list(self._offsets())

    def _offsets(self) -> list[int]:
        """(under _lock) the kept offsets, from a listing of the directory the first time."""
        if self._known is None:
            self._known = _snapshot_offsets(self._names())
        return self._known

    def _names(self) -> list[str]:
        try:
            return [p.name for p in self.dir.iterdir()]
        except FileNotFoundError:
            return []

    def latest_at_or_below(self, end: int) -> Snapshot | None:
        """The newest whole snapshot at or below `end` (the log end); deletes those past it,
        skips corrupt ones (logged) and removes a write a crash interrupted."""
        names = self._names()
        with self._lock:
            self._known = _snapshot_offsets(names)
        self.truncate_after(end)
        for name in names:
            if name.endswith(f"{SUFFIX}.tmp"):
                (self.dir / name).unlink(missing_ok=True)
        for offset in reversed(self.offsets()):
            path = self.dir / snapshot_name(offset)
            try:
                snap = decode(path.read_bytes())
            except (OSError, CorruptSnapshot) as exc:
                log.warning("%s: ignored (%s): falling back to an older snapshot or the log", path, exc)
                continue
            if snap.offset == offset:
                return snap
            log.warning("%s: holds offset %d, not its name's: ignored", path, snap.offset)
        return None

    def truncate_after(self, end: int) -> None:
        """Delete every snapshot past `end`, durably, and drop any write in flight."""
        with self._lock:
            self._generation += 1
            known = self._offsets()
            doomed = [o for o in known if o > end]
            for offset in doomed:
                (self.dir / snapshot_name(offset)).unlink(missing_ok=True)
            self._known = [o for o in known if o <= end]
            if doomed:
                fsync_dir(self.dir)

    @property
    def generation(self) -> int:
        return self._generation

    def write(self, snap: Snapshot, generation: int) -> bool:
        """Store `snap` (taken when the generation was `generation`), then keep only the KEEP
        newest; False when a truncation since made it stale. Raises OSError."""
        tmp = self.stage(snap)
        with open(tmp, "rb") as f:
            fsync(f.fileno(), "snapshot")
        return self.publish(tmp, snap.offset, generation)

    def stage(self, snap: Snapshot) -> Path:
        """Write `snap` to its temp file, not yet durable: `publish` it once a sync covered it
        (write_round syncs a whole round of snapshots with one syncfs). Raises OSError."""
        tmp = self.dir / (snapshot_name(snap.offset) + ".tmp")
        with open(tmp, "wb") as f:
            f.write(encode(snap))
        return tmp

    def publish(self, tmp: Path, offset: int, generation: int) -> bool:
        """Rename a staged, durable snapshot into place and keep only the KEEP newest; False
        (and the temp file gone) when a truncation since made it stale."""
        with self._lock:
            if generation != self._generation:
                tmp.unlink(missing_ok=True)
                return False
            # No directory fsync: a rename or delete a power loss undoes leaves an older whole
            # snapshot or none, and either is a correct (slower) start.
            known = self._offsets()
            os.replace(tmp, self.dir / snapshot_name(offset))
            if offset not in known:
                bisect.insort(known, offset)
            for older in known[:-KEEP]:
                (self.dir / snapshot_name(older)).unlink(missing_ok=True)
            del known[:-KEEP]
        return True

    def delete_all(self) -> None:
        self.truncate_after(-1)


def _snapshot_offsets(names: list[str]) -> list[int]:
    return sorted(int(n[:-len(SUFFIX)]) for n in names if n.endswith(SUFFIX) and n[:-len(SUFFIX)].isdigit())


class PendingSnapshot:
    """A snapshot copied on the loop, to be written in a worker thread: call it to write it on
    its own (fsync), or give a round of them to `write_round`."""

    __slots__ = ("name", "snapshots", "snap", "generation", "_tmp")

    def __init__(self, name: str, snapshots: ProducerSnapshots, snap: Snapshot, generation: int) -> None:
        self.name, self.snapshots, self.snap, self.generation = name, snapshots, snap, generation
        self._tmp: Path | None = None

    def __call__(self) -> None:
        try:
            self.snapshots.write(self.snap, self.generation)
        except OSError as exc:  # the log still holds every batch: a restart replays more
            self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        log.warning("%s: producer-state snapshot at %d not written: %s", self.name, self.snap.offset, exc)


def write_round(pending: list[PendingSnapshot]) -> None:
    """Write every snapshot, one syncfs per filesystem they are on, then rename each into place:
    one sync a round rather than one fsync a partition (20,000 changed partitions made a round
    of 20,000 fsyncs that starved the produce path of the disk)."""
    staged = []
    for p in pending:
        try:
            staged.append((p, p.snapshots.stage(p.snap)))
        except OSError as exc:
            p._failed(exc)
    synced: dict[int, OSError | None] = {}
    for p, tmp in staged:
        device = os.stat(tmp.parent).st_dev
        if device not in synced:
            try:
                syncfs(str(tmp.parent), "snapshot")
                synced[device] = None
            except OSError as exc:
                synced[device] = exc
        if synced[device] is not None:
            tmp.unlink(missing_ok=True)
            p._failed(synced[device])
            continue
        try:
            p.snapshots.publish(tmp, p.snap.offset, p.generation)
        except OSError as exc:
            p._failed(exc)
