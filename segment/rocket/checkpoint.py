"""`checkpoint` and `abort`: how far recovery may trust the files, and whether it must.

    commitlog-store/
        checkpoint   JSON, written to checkpoint.tmp, fsynced, renamed over
        abort        exists from open until a clean close

    {
      "version": 1,
      "commitlog": 123456,             every unit before this commitlog offset is
                                       fsynced and so are the consume-queue and
                                       index entries dispatched from them
      "index": ["<index file name>", 42],   entries of the newest index file that were
                                       fsynced with it (null: no index file yet)
      "log_start": [["topic", 0, 17], ...]  each partition's log start offset
      "flushed": 130000,               every unit before this commitlog offset is
                                       fsynced (>= "commitlog"; the periodic flush
                                       advances it without fsyncing queues or index)
      "sizes": [["topic", 0, 17, 950, 81234, 4096], ...]   each open partition's bytes of
                                       live batches: log start, end, size, and the commitlog
                                       position of the batch it ended with (-1: none)
    }

RocketMQ keeps the same facts in a binary StoreCheckpoint (physicMsgTimestamp,
logicsMsgTimestamp, indexMsgTimestamp) and decides where to recover from by
comparing each commitlog file's first store time with them; positions say the
same thing without clock comparisons. Log start offsets live here too, because
in this layout they cannot be read off file names as in Kafka's segments, and so
does each partition's size, so that opening a log counts only the batches past
its checkpointed end instead of walking its whole consume queue.

Crash behaviour: the rename makes the file either the old or the new version.
The commitlog position and index count are only ever written after the data
they describe is fsynced, so everything before them is intact; what comes after
them is re-derived from the commitlog on open. A log start offset may be older
than the last one in memory (retention advances it between checkpoints); the
store then raises it to the first batch still present in the commitlog. A size
is trusted only for the log it was counted on: the same log start, and the batch
it ended with still at the same commitlog position (a truncation and new appends
put different batches there); otherwise the log's batches are counted again.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from segment.file_io import replace_file

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint"
ABORT = "abort"


class MeasuredSize(NamedTuple):
    """A partition's live bytes when its log spanned [log_start, end), the last batch below
    `end` being the one at commitlog offset `last_phys`."""
    log_start: int
    end: int
    size: int
    last_phys: int


@dataclass
class Checkpoint:
    commitlog: int = 0
    index_file: str | None = None
    index_count: int = 0
    log_start: dict[tuple[str, int], int] = field(default_factory=dict)
    flushed: int = 0
    sizes: dict[tuple[str, int], MeasuredSize] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": 1,
                "commitlog": self.commitlog,
                "index": [self.index_file, self.index_count] if self.index_file else None,
                "log_start": [[t, p, o] for (t, p), o in sorted(self.log_start.items())],
                "flushed": max(self.flushed, self.commitlog),
                "sizes": [[t, p, *m] for (t, p), m in sorted(self.sizes.items())],
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> Checkpoint:
        raw = json.loads(text)
        index = raw.get("index") or [None, 0]
        return cls(
            commitlog=int(raw["commitlog"]),
            index_file=index[0],
            index_count=int(index[1]),
            log_start={(t, int(p)): int(o) for t, p, o in raw.get("log_start", [])},
            flushed=int(raw.get("flushed", raw["commitlog"])),
            sizes={(t, int(p)): MeasuredSize(*map(int, m)) for t, p, *m in raw.get("sizes", [])},
        )


def read_checkpoint(directory: Path) -> Checkpoint:
    path = Path(directory) / CHECKPOINT
    if not path.exists():
        return Checkpoint()
    try:
        return Checkpoint.from_json(path.read_text())
    except (ValueError, KeyError, TypeError, IndexError):
        log.warning("ignoring malformed %s: recovering from the start of the commitlog", path)
        return Checkpoint()


def write_checkpoint(directory: Path, checkpoint: Checkpoint) -> None:
    replace_file(Path(directory) / CHECKPOINT, checkpoint.to_json())


def mark_running(directory: Path) -> bool:
    """Create the abort file; True if it was already there (the last stop was not clean)."""
    path = Path(directory) / ABORT
    existed = path.exists()
    path.touch()
    return existed


def mark_clean(directory: Path) -> None:
    (Path(directory) / ABORT).unlink(missing_ok=True)
