"""One partition's consume queue: where each of its batches sits in the commitlog.

    consumequeue/<topic>/<partition>/
        00000000000000000000        entries 0 .. 299,999
        00000000000000000000.time   the matching time entries
        00000000000000300000        entries 300,000 .. (named by first entry index)
        00000000000000300000.time
        aborted.txnindex            the partition's aborted transactions (segment/txn_index.py),
                                    cut with the queue, trimmed as its files go

Each file holds 20-byte entries (RocketMQ's CQ_STORE_UNIT_SIZE: commitlog offset, unit size,
tag), with a side file of time entries; queue_file.py draws both and keeps one pair.

One entry per record BATCH, not per record: the commitlog stores batches and a
fetch must return whole batches, so an entry per record would only repeat the
batch's position recordCount times. RocketMQ puts a tag hash in the last 8
bytes; we put the batch's Kafka base offset there, so the offset → batch lookup
is a binary search over entries (O(log n) preads of the queue, never the
commitlog). The batch holding offset o is the last entry with base <= o; its
last offset is the next entry's base - 1 (or lastOffsetDelta for the last).

The time entry makes ListOffsets by timestamp cheap: the running max is
non-decreasing, so the first batch whose maxTimestamp reaches a target is found
by binary search, and only that batch is read from the commitlog. The last
offset delta keeps the log end offset known even when the commitlog file of the
last batch has been deleted.

Entries are appended in commitlog order, so within a queue both the base offset
and the commitlog offset increase. Files grow to at most `entries_per_file`
entries; only the last file takes entries, and only it may hold some not yet
written (queue_file.py: why they wait in memory).

A queue's first pair of files is created empty with the queue, where its directory is made: in
the admin worker for a new partition (store.prepare_partition), so a partition's first write
only opens files that exist. Created by that write, they cost the event loop ~0.5 ms each: the
first produce to 5,000 new partitions kept every client waiting 2-4 s. The next pair, at a roll
every `entries_per_file` entries, is still created by its first write (one pair per 300,000
batches).

Crash behaviour: each pair is cut to its whole entries on open (queue_file.py); a
short file that is not the last ends the queue; an empty or missing file holds no
entries (a crash may leave a new queue's pair empty, or only one of it made).
Recovery (see dispatch.py) then drops entries at or past the commitlog offset it
re-dispatches from and rebuilds them.
"""

from __future__ import annotations

import shutil
from bisect import bisect_right
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from segment.open_files import OpenFiles
from segment.txn_index import TransactionIndex

from .queue_file import ENTRY, TIME, QueueFile

ABORTED_TXNS = "aborted.txnindex"
READ_CHUNK = 256


class QueueEntry(NamedTuple):
    index: int
    phys: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    running_max: int


class ConsumeQueue:
    def __init__(self, directory: Path, topic: str, partition: int, entries_per_file: int,
                 files: OpenFiles) -> None:
        self.dir = Path(directory)
        try:
            self.dir.mkdir(parents=True)
            self.made_empty = True  # a new queue: nothing in its directory to list or read
        except FileExistsError:
            self.made_empty = False
        self.topic, self.partition = topic, partition
        self.per_file = entries_per_file
        self.open_files = files
        self.empty_end = 0  # log end offset while the queue holds no entry (set by the owner)
        self.files: list[QueueFile] = []
        self._dirty: set[QueueFile] = set()
        names = [] if self.made_empty else sorted(int(p.name) for p in self.dir.iterdir() if p.name.isdigit())
        for first in names:
            f = QueueFile(self.dir, first, files)
            if self.files and (first != self.files[-1].first_index + self.files[-1].count):
                f.unlink()  # after a short file nothing can follow
                continue
            self.files.append(f)
        if not self.files:  # a new queue (or one whose files a crash kept from being made)
            QueueFile.create_empty(self.dir, 0)
            self.files.append(QueueFile(self.dir, 0, files))
        for f in self.files[:-1]:
            f.set_sealed(True)
        for p in [] if self.made_empty else self.dir.glob("*.time"):
            if not p.name[:-5].isdigit() or int(p.name[:-5]) not in [f.first_index for f in self.files]:
                p.unlink()
        self._firsts = [f.first_index for f in self.files]
        self._first_bases = [self._raw(f, 0)[2] for f in self.files if f.count]
        self._reload_last()
        # its entries: the partition log's
        self.aborted = TransactionIndex(self.dir / ABORTED_TXNS, files, missing=self.made_empty)

    # ----- geometry -------------------------------------------------------------

    @property
    def start_index(self) -> int:
        return self.files[0].first_index if self.files else 0

    @property
    def next_index(self) -> int:
        return self.files[-1].first_index + self.files[-1].count if self.files else 0

    def __len__(self) -> int:
        return self.next_index - self.start_index

    @property
    def end_offset(self) -> int:
        return self.last.last_offset + 1 if self.last is not None else self.empty_end

    @property
    def first_offset(self) -> int | None:
        return self._first_bases[0] if self._first_bases else None

    def _file_of(self, index: int) -> QueueFile:
        return self.files[bisect_right(self._firsts, index) - 1]

    def _raw(self, f: QueueFile, rel: int) -> tuple:
        return f.read(rel, 1)[0]

    def _entry(self, index: int, raw: tuple) -> QueueEntry:
        phys, size, base, max_ts, running, delta = raw
        return QueueEntry(index, phys, size, base, base + delta, max_ts, running)

    def entry(self, index: int) -> QueueEntry:
        f = self._file_of(index)
        return self._entry(index, self._raw(f, index - f.first_index))

    def entries_from(self, index: int) -> Iterator[QueueEntry]:
        index = max(index, self.start_index)
        while index < self.next_index:
            f = self._file_of(index)
            rel = index - f.first_index
            for raw in f.read(rel, min(READ_CHUNK, f.count - rel)):
                yield self._entry(index, raw)
                index += 1

    def _reload_last(self) -> None:
        self.last = self.entry(self.next_index - 1) if len(self) else None

    # ----- searching ------------------------------------------------------------

    def _bisect(self, key: Callable[[QueueEntry], bool]) -> int:
        """First index whose entry satisfies `key` (monotonic: False...False True...True); next_index if none."""
        lo, hi = self.start_index, self.next_index
        while lo < hi:
            mid = (lo + hi) // 2
            if key(self.entry(mid)):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def find(self, offset: int) -> int | None:
        """Index of the batch holding `offset` (or the first batch after it); None if none."""
        if self.last is None or offset > self.last.last_offset:
            return None
        if offset >= self.last.base_offset:
            return self.last.index
        k = bisect_right(self._first_bases, offset) - 1
        if k < 0:
            return self.start_index
        f = self.files[k]
        lo, hi = f.first_index, f.first_index + f.count
        while hi - lo > 1:  # invariant: base(lo) <= offset < base(hi)
            mid = (lo + hi) // 2
            if self._raw(f, mid - f.first_index)[2] <= offset:
                lo = mid
            else:
                hi = mid
        return lo

    def first_phys_at_or_after(self, phys: int) -> int:
        if self.last is None or self.last.phys < phys:
            # No file read: a start asks every queue for the checkpoint's position, which is
            # past the last entry of all but the few written since it (Dispatcher._drop_from).
            return self.next_index
        return self._bisect(lambda e: e.phys >= phys)

    def first_reaching(self, timestamp_ms: int) -> int:
        """First index whose running max timestamp >= timestamp_ms (next_index if none)."""
        return self._bisect(lambda e: e.running_max >= timestamp_ms)

    # ----- writing --------------------------------------------------------------

    def put(self, phys: int, size: int, base_offset: int, last_offset: int, max_timestamp: int) -> QueueEntry:
        f = self.files[-1]
        if f.count >= self.per_file:
            f.write_pending()  # only the last file may hold pending entries
            f.set_sealed(True)
            f = QueueFile(self.dir, self.next_index, self.open_files)
            self.files.append(f)
            self._firsts.append(f.first_index)
        running = max(max_timestamp, self.last.running_max) if self.last is not None else max_timestamp
        if f.count == 0:
            self._first_bases.append(base_offset)
        f.add(ENTRY.pack(phys, size, base_offset), TIME.pack(max_timestamp, running, last_offset - base_offset))
        self._dirty.add(f)
        self.last = QueueEntry(f.first_index + f.count - 1, phys, size, base_offset, last_offset, max_timestamp, running)
        return self.last

    def truncate_entries(self, index: int) -> bool:
        """Keep only entries before `index`; returns whether any entry went."""
        if index >= self.next_index:
            return False
        if len(self):
            self.empty_end = self.entry(max(index, self.start_index)).base_offset  # the LEO if none is left
        while len(self.files) > 1 and self.files[-1].first_index >= index:
            doomed = self.files.pop()
            self._dirty.discard(doomed)
            doomed.unlink()
            self._firsts.pop()
        f = self.files[-1]
        f.set_sealed(False)
        f.set_count(max(index - f.first_index, 0))
        self._first_bases = self._first_bases[: len(self.files) - (0 if f.count else 1)]
        self._reload_last()
        self.aborted.truncate_from(self.end_offset)
        return True

    def cut_point(self, offset: int) -> int:
        """Where truncate_to_offset(offset) makes the queue end: the base of the batch holding
        `offset` (or `offset` if no batch does)."""
        if self.end_offset <= offset:
            return self.end_offset
        i = self._bisect(lambda e: e.last_offset >= offset)
        return min(self.entry(i).base_offset, offset) if i < self.next_index else offset

    def truncate_to_offset(self, offset: int) -> bool:
        """Drop every batch holding an offset >= `offset` (the batch containing it too). A queue
        without entries ends at `empty_end`, which a cut below it moves down: a log whose
        batches an earlier cut already removed, and the replay of such cuts after a crash
        (where the queue files already lack the entries), must end where the last cut says."""
        if self.end_offset <= offset:
            return False
        if self.last is not None:
            self.truncate_entries(self._bisect(lambda e: e.last_offset >= offset))
        if self.last is None:
            self.empty_end = min(self.empty_end, offset)  # below every batch: the log restarts there
            self.aborted.truncate_from(self.empty_end)
        return True

    def start_at(self, offset: int) -> None:
        """Drop every entry: the queue is empty and ends at `offset`, below or above what it held."""
        self.truncate_entries(self.start_index)
        self.empty_end = offset
        self.aborted.reset()

    def delete_files_below(self, index: int) -> int:
        """Remove whole files whose entries all lie below `index` (never the last file)."""
        removed = 0
        while len(self.files) > 1 and self.files[1].first_index <= index:
            f = self.files.pop(0)
            self._firsts.pop(0)
            self._first_bases.pop(0)
            self._dirty.discard(f)
            removed += f.count
            f.unlink()
        if removed and self.first_offset is not None:
            self.aborted.trim_before(self.first_offset)  # their markers went with them
        return removed

    # ----- durability -----------------------------------------------------------

    def write_pending(self) -> None:
        """Write the entries added since the last call (only the last file can hold any)."""
        if self.files:
            self.files[-1].write_pending()

    def flush(self) -> None:
        """fsync what write_pending wrote (safe in a worker thread while entries are added)."""
        dirty, self._dirty = self._dirty, set()
        for f in dirty:
            f.sync()  # an OSError takes the store offline; a deleted file needs none
        self.aborted.flush()

    def close(self) -> None:
        self.write_pending()
        self.flush()
        for f in self.files:
            f.close()
        self.aborted.close()

    def forget_files(self) -> None:
        """The queue's directory is being removed: its files close and never open again."""
        for f in self.files:
            f.forget()
        self.aborted.forget()

    def delete(self) -> None:
        self.forget_files()
        self.files = []
        shutil.rmtree(self.dir, ignore_errors=True)
