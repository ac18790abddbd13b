"""The share-partition state a restart reads back: one small text file per (group, topic, partition).

Layout of `<data dir>/share-group-state/<group id, UTF-8 as hex>/<topic id hex>-<partition>.state`:

    twinlog-share-state 1                       magic word, format version
    <state epoch> <start offset> <n>            the window's start, how many ranges follow
    <first> <last> <state> <delivery count>     n lines, ascending, not overlapping: state 0
    ...                                         AVAILABLE (delivered before), 2 ACKNOWLEDGED,
                                                4 ARCHIVED (share_partition.RecordState ids)
    end                                         the file is whole

Offsets at or past the start that no range names are AVAILABLE, never delivered. An ACQUIRED
record is written as AVAILABLE with its delivery count: a restart ends every lock.

After a crash: each write replaces the whole file through segment.file_io.replace_file (a `.tmp`
fsynced, renamed over the file, the directory fsynced), so the file holds the state of the last
write that returned, or of the one before it if that write had not returned; nothing was
acknowledged to a client before its write returned. A file that does not parse is refused
(MalformedShareState) rather than guessed at: starting afresh would redeliver, or skip, what
its owner was told. Twinlog keeps this state in files rather than Kafka's compacted topic
`__share_group_state`; so it belongs to the broker that wrote it (a single broker's state).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Callable

from segment.file_io import fsync_dir, replace_file

from broker.groups.share.share_partition import RecordState, StateRange

MAGIC = "twinlog-share-state 1"
DIRECTORY = "share-group-state"
Snapshot = tuple[int, int, tuple[StateRange, ...]]  # SharePartition.snapshot(): epoch, start, ranges


class MalformedShareState(Exception):
    """A state file that does not parse: the share-partition is not served until it is fixed."""


def encode(snapshot: Snapshot) -> str:
    epoch, start, ranges = snapshot
    lines = [MAGIC, f"{epoch} {start} {len(ranges)}"]
    lines += [f"{r.first} {r.last} {int(r.state)} {r.delivery_count}" for r in ranges]
    lines.append("end")
    return "\n".join(lines) + "\n"


def decode(text: str) -> Snapshot:
    lines = text.split("\n")
    try:
        if lines[0] != MAGIC:
            raise MalformedShareState(f"first line {lines[0]!r}, not {MAGIC!r}")
        epoch, start, count = map(int, lines[1].split())
        if lines[2 + count] != "end" or lines[3 + count:] != [""]:
            raise MalformedShareState(f"says {count} ranges, holds {len(lines) - 4}")
        ranges = []
        for line in lines[2:2 + count]:
            first, last, state, delivered = map(int, line.split())
            ranges.append(StateRange(first, last, RecordState(state), delivered))
    except (IndexError, ValueError) as exc:
        raise MalformedShareState(f"unreadable: {exc}") from None
    at = start
    for r in ranges:
        if r.first < at or r.last < r.first or r.state is RecordState.ACQUIRED or r.delivery_count < 0:
            raise MalformedShareState(f"range {r} out of order, empty, or in a state never written")
        at = r.last + 1
    return epoch, start, tuple(ranges)


class ShareStateFiles:
    """Reads and writes the state files under one data dir; writes run in a thread, one at a
    time per file, each writing the partition's state as it is when the write starts (so a
    burst of changes costs one write, not one each)."""

    def __init__(self, data_dir: Path) -> None:
        self.root = Path(data_dir) / DIRECTORY
        self._locks: dict[Path, asyncio.Lock] = {}
        self._written: dict[Path, Snapshot] = {}

    def path(self, group_id: str, topic_id: uuid.UUID, partition: int) -> Path:
        return self.root / group_id.encode().hex() / f"{topic_id.hex}-{partition}.state"

    def load(self, group_id: str, topic_id: uuid.UUID, partition: int) -> Snapshot | None:
        """The kept state, None if there is none; raises MalformedShareState."""
        path = self.path(group_id, topic_id, partition)
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        snapshot = decode(text)
        self._written[path] = snapshot
        return snapshot

    async def save(self, group_id: str, topic_id: uuid.UUID, partition: int,
                   snapshot: Callable[[], Snapshot]) -> None:
        """Store `snapshot()` as it is once earlier writes of the file are done; raises OSError
        when it could not be stored (the caller answers with an error, never an ack)."""
        path = self.path(group_id, topic_id, partition)
        lock = self._locks.setdefault(path, asyncio.Lock())
        async with lock:
            state = snapshot()
            if self._written.get(path) == state:
                return  # an earlier waiter already wrote what this change made
            await asyncio.to_thread(_write, path, encode(state))
            self._written[path] = state


def _write(path: Path, text: str) -> None:
    if not path.parent.is_dir():  # a new group's directory: its entry made durable too
        path.parent.mkdir(parents=True, exist_ok=True)
        fsync_dir(path.parent.parent)
        fsync_dir(path.parent.parent.parent)
    replace_file(path, text)
