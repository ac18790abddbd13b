"""A partition's leader-epoch cache: the first offset written in each leader epoch.

Kafka's LeaderEpochFileCache, in Kafka's `leader-epoch-checkpoint` format (offset_checkpoint.py):

    0            version
    3            number of entries
    0 0          "epoch start_offset": epoch 0 wrote offsets 0..1499,
    2 1500       epoch 2 wrote 1500..1729 (epoch 1 wrote nothing that survived),
    5 1730       epoch 5 wrote from 1730 to the log end.

Epochs and start offsets both increase strictly down the file. The segment engine keeps the
file in the partition directory, the commitlog engine beside the partition's consume queue.
It answers OffsetForLeaderEpoch (`end_offset_for`): a follower that asks "where did epoch E
end?" truncates its log there before fetching (KIP-101, KIP-279), and so do clients that
check their position after a leader change.

Crash behaviour: a truncation rewrites the file (replace_file: temp, fsync, rename, fsync of
the directory) before the call returns, after changing the cache; the logs make their own cut
durable before they cut the cache. A new epoch (`assign`, on the append path) only changes the
cache: the file is rewritten by `write_if_changed`, which the logs call when they flush and
close, as Kafka stopped fsyncing the checkpoint on assign (KAFKA-15046). Writing it on assign
cost two fsyncs per partition on the event loop: a first produce to 5,000 new partitions
stalled every client 12-15 s. After a crash the file may therefore lack the newest epochs, and
it may hold entries at or past the log end (batches that did not survive): opening a log trims
the latter and checks every entry against the batch it names and the log's last batch against
the latest entry (epoch_recovery.py), rebuilding from the batches' own partitionLeaderEpoch
fields if anything disagrees, so a file behind its log is rebuilt, as Kafka re-reads segments
past its recovery point.

Changed from the event loop only (appends, truncation, retention); `write_if_changed` may run
in a flush thread, so file writes take a lock.
"""

from __future__ import annotations

import logging
import os
import threading
from bisect import bisect_right
from pathlib import Path
from typing import Iterable, NamedTuple

from segment.storage_errors import WriteRefused
from segment.fsync_count import syncfs
from segment.offset_checkpoint import MalformedCheckpoint, entry_lines_text, read_entry_lines, write_entry_lines

log = logging.getLogger(__name__)

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
ROUND_SUFFIX = ".round.tmp"  # write_epochs_round's temp file, beside replace_file's ".tmp"
ROUND_MIN = 4  # write_epochs_round writes this many changed files or fewer one by one
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


# ----- the rules, as functions of an entry list (the cache and recovery share them) -----------


def assigned(entries: list[EpochEntry], epoch: int, start_offset: int) -> list[EpochEntry]:
    """Kafka's assign: a no-op for the latest epoch at or after its start; otherwise every
    entry that would break the strict order (epoch >= `epoch` or start >= `start_offset`)
    goes, and (epoch, start_offset) becomes the latest entry."""
    if epoch < 0 or start_offset < 0:
        raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
    if entries and entries[-1].epoch == epoch and entries[-1].start_offset <= start_offset:
        return entries
    kept = list(entries)
    while kept and (kept[-1].epoch >= epoch or kept[-1].start_offset >= start_offset):
        kept.pop()
    return kept + [EpochEntry(epoch, start_offset)]


def cut_from_end(entries: list[EpochEntry], end_offset: int) -> list[EpochEntry]:
    """Entries whose epoch started before `end_offset` (the log was truncated there)."""
    kept = list(entries)
    while kept and kept[-1].start_offset >= end_offset:
        kept.pop()
    return kept


def cut_from_start(entries: list[EpochEntry], start_offset: int) -> list[EpochEntry]:
    """The log now starts at `start_offset`: the epoch holding it starts there, earlier ones go.
    (An entry starting exactly there is kept as it is.)"""
    i = bisect_right([e.start_offset for e in entries], start_offset)
    if i == 0:
        return list(entries)
    return [EpochEntry(entries[i - 1].epoch, start_offset)] + list(entries[i:])


# ----- the cache -----------------------------------------------------------------------


class LeaderEpochCache:
    def __init__(self, path: Path, missing: bool = False) -> None:
        """`missing`: the caller knows there is no file (its directory was just made)."""
        self.path = Path(path)
        self._entries: list[EpochEntry] = []
        self._written: list[EpochEntry] | None = None  # the list the file holds, if written by us
        self._write_lock = threading.Lock()
        self.loaded = False  # the file existed and parsed; if not, recovery rebuilds from the log
        try:
            lines = None if missing else read_entry_lines(self.path)
            if lines is not None:
                self._entries = _parse(lines)
                self._written = self._entries
                self.loaded = True
        except MalformedCheckpoint as exc:
            log.warning("%s: %s: rebuilding the leader-epoch cache from the log", self.path, exc)

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def has_entries_from(self, offset: int) -> bool:
        """Whether truncate_from_end(offset) would drop anything."""
        return bool(self._entries) and self._entries[-1].start_offset >= offset

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) as Kafka's OffsetForLeaderEpoch answers for `epoch`:
        - the latest epoch: (epoch, log_end_offset), it is still being written;
        - otherwise the largest cached epoch <= `epoch` and the start of the next cached
          epoch, where that epoch's data ends;
        - `epoch` below every cached epoch (its data went with retention): (`epoch`, the
          first cached start), so a follower truncates no further than the log start;
        - UNDEFINED_EPOCH (-1), an empty cache or an epoch above the latest: (-1, -1).
        """
        entries = self._entries
        if epoch == UNDEFINED_EPOCH or not entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if entries[-1].epoch == epoch:
            return epoch, log_end_offset
        i = bisect_right([e.epoch for e in entries], epoch)  # entries[i] is the first epoch above
        if i == len(entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        found = entries[i - 1].epoch if i > 0 else epoch
        return found, entries[i].start_offset

    # ----- changes ---------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Kafka's assign (see `assigned`); True if the cache changed. The file follows at the
        next `write_if_changed`."""
        new = assigned(self._entries, epoch, start_offset)
        if new == self._entries:
            return False
        dropped = self._entries[len(new) - 1 :]  # new is a prefix of the old entries plus one
        if len(dropped) > 1 or (dropped and dropped[0].start_offset != start_offset):
            log.warning("%s: epoch %d from %d drops conflicting entries %s", self.path, epoch, start_offset, dropped)
        self._entries = new
        return True

    def assign_if_newer(self, epoch: int, start_offset: int) -> bool:
        """Record the epoch of a batch about to be appended at `start_offset` if it is newer than
        the latest (Kafka's rule when it re-reads batches); batches without an epoch (-1) and
        batches of the latest epoch change nothing."""
        if epoch < 0 or epoch <= self.latest_epoch():
            return False
        return self.assign(epoch, start_offset)

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop entries starting at or after `end_offset`. The cache changes even if the file
        cannot be written (WriteRefused): its extra entries are trimmed on the next open."""
        new = cut_from_end(self._entries, end_offset)
        return new != self._entries and self._set(new)

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log start moved to `start_offset` (DeleteRecords, retention); see cut_from_start."""
        new = cut_from_start(self._entries, start_offset)
        return new != self._entries and self._set(new)

    def replace(self, entries: list[EpochEntry]) -> bool:
        """Take `entries` (recovery's verdict); written even if equal when there was no file."""
        return (entries != self._entries or not self.loaded) and self._set(entries)

    def _set(self, entries: list[EpochEntry]) -> bool:
        self._entries = entries
        self._write(entries)
        return True

    def write_if_changed(self) -> None:
        """Make the file hold the cache, durably, if it does not yet (the logs' flush and close).
        Raises WriteRefused; the file is then tried again at the next call.

        An empty cache with no file of ours is left without one: a missing file reads as empty,
        and a partition that never took a batch (most of a new 2,000-partition topic) would
        otherwise cost two fsyncs at each flush and at shutdown. 4,000 of them kept a loaded
        broker from stopping within 20 s."""
        entries = self._entries  # replaced, never changed in place: a consistent snapshot
        if self._unchanged(entries):
            return
        self._write(entries)

    def _unchanged(self, entries: list[EpochEntry]) -> bool:
        return entries is self._written or (not entries and self._written is None and not self.path.exists())

    def _write(self, entries: list[EpochEntry]) -> None:
        with self._write_lock:
            try:
                write_entry_lines(self.path, _lines(entries))
            except OSError as exc:
                raise WriteRefused(f"cannot write {self.path}: {exc.strerror or exc}") from exc
            self._written = entries
            self.loaded = True


    # ----- write_epochs_round's steps ---------------------------------------------

    def _stage(self) -> _Staged | None:
        """Write the cache to its round's temp file, not yet durable; None if the file holds it."""
        with self._write_lock:
            entries, written = self._entries, self._written
            if self._unchanged(entries):
                return None
            tmp = self.path.with_name(self.path.name + ROUND_SUFFIX)
            tmp.write_text(entry_lines_text(_lines(entries)))
            return _Staged(self, entries, written, tmp)

    def _publish(self, staged: _Staged) -> bool:
        """Rename a durable staged file into place, unless a truncation rewrote the file since
        (its cut is newer than what was staged): then the temp file goes."""
        with self._write_lock:
            if self._written is not staged.written:
                staged.tmp.unlink(missing_ok=True)
                return False
            os.replace(staged.tmp, self.path)
            return True

    def _published(self, staged: _Staged) -> None:
        """The renames of the round are durable: the file holds `staged.entries`."""
        with self._write_lock:
            if self._written is staged.written:
                self._written = staged.entries
                self.loaded = True


class _Staged(NamedTuple):
    cache: LeaderEpochCache
    entries: list[EpochEntry]
    written: list[EpochEntry] | None  # what the file held when staged
    tmp: Path


def _lines(entries: list[EpochEntry]) -> list[str]:
    return [f"{e.epoch} {e.start_offset}" for e in entries]


def write_epochs_round(caches: Iterable[LeaderEpochCache]) -> None:
    """Make the file of every changed cache hold it, as write_if_changed does, with two syncfs
    per filesystem in all instead of two fsyncs per file: every temp file written, one sync,
    every rename, one sync (replace_file's order: the content durable before the rename,
    the rename durable before the file counts as written). A clean stop of 10,000 commitlog
    partitions that had each taken a batch since the start spent 31 s in those fsyncs
    (py-spy). A failure is a warning, as in write_epochs_if_changed: the caches stay changed
    and the next round or flush tries again. A syncfs writes back every dirty file of the
    filesystem, whoever wrote it: up to ROUND_MIN changed files are written one by one."""
    changed = [cache for cache in caches if not cache._unchanged(cache._entries)]
    if len(changed) <= ROUND_MIN:
        for cache in changed:
            write_epochs_if_changed(cache)
        return
    staged: list[_Staged] = []
    for cache in changed:
        try:
            one = cache._stage()
        except OSError as exc:
            log.warning("leader-epoch cache not written (rebuilt from the log if it crashes): %s: %s", cache.path, exc)
            continue
        if one is not None:
            staged.append(one)
    if not staged:
        return
    try:
        _sync_filesystems(staged)
        renamed = [s for s in staged if s.cache._publish(s)]
        _sync_filesystems(renamed)
    except OSError as exc:
        log.warning("leader-epoch caches not written (rebuilt from the log if it crashes): %s", exc)
        for s in staged:
            s.tmp.unlink(missing_ok=True)
        return
    for s in renamed:
        s.cache._published(s)


def _sync_filesystems(staged: list[_Staged]) -> None:
    """One syncfs for each filesystem the files are on. Raises OSError."""
    done: set[int] = set()
    for s in staged:
        device = os.stat(s.cache.path.parent).st_dev
        if device not in done:
            syncfs(str(s.cache.path.parent), "checkpoint")
            done.add(device)


def write_epochs_if_changed(cache: LeaderEpochCache) -> None:
    """The logs' flush: the cache file is derived data (a file behind its log is rebuilt when
    the log opens), so a failure to write it is a warning, not a reason to refuse the flush."""
    try:
        cache.write_if_changed()
    except WriteRefused as exc:
        log.warning("leader-epoch cache not written (rebuilt from the log if it crashes): %s", exc)


def _parse(lines: list[str]) -> list[EpochEntry]:
    entries: list[EpochEntry] = []
    for line in lines:
        try:
            epoch, start = (int(x) for x in line.split(" "))
        except ValueError as exc:
            raise MalformedCheckpoint(f"bad leader epoch entry {line!r}") from exc
        if entries and (epoch <= entries[-1].epoch or start <= entries[-1].start_offset) or epoch < 0 or start < 0:
            raise MalformedCheckpoint(f"leader epoch entry {line!r} breaks the order of {entries}")
        entries.append(EpochEntry(epoch, start))
    return entries
