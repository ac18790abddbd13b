"""cleaner-offset-checkpoint: where each compacted partition's next clean starts.

Kafka's LogCleanerManager keeps, per log dir, the offset each partition was last cleaned up
to (its "first dirty offset"), so a restarted broker does not clean every compacted log
again from its start. Here one file in the broker's data dir serves both layouts (a topic
lives in exactly one, so a topic-partition names one log), in the offset checkpoint format
(segment/offset_checkpoint.py):

    0                        version
    2                        entries
    orders 0 1200            topic partition first-dirty-offset
    payments 3 977

Written whole (temp, fsync, rename, directory fsync) after each round, once the round's
swaps are durable, so after a crash the file names the end of a round that is on disk, or
an earlier one: a partition is then cleaned again from there, which costs time and nothing
else (cleaning a clean stretch again keeps what it kept). A missing or malformed file reads
as empty: every partition starts from its log start, as before this file existed.

An entry is used only while it lies in the log's range [log start, log end] (Kafka's
cleanableOffsets): outside it the log was truncated, recreated or moved past it by
retention, and the clean starts from the log start. An entry is also dropped when the
partition's log object is not the one it was recorded for (the topic was deleted and
created again while the broker ran). Entries of deleted partitions stay in the file until
the name is reused; each is one short line.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from segment.offset_checkpoint import read_checkpoint, write_checkpoint

log = logging.getLogger(__name__)

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"

Key = tuple[str, int]


class CleanerCheckpoint:
    """The file's entries in memory; safe to use from several cleaner threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._offsets: dict[Key, int] = read_checkpoint(self.path)
        self._logs: dict[Key, object] = {}  # the log each entry of this run was recorded for

    def first_dirty(self, key: Key, plog) -> int:
        """Where the next round of `plog` (the log of `key`) starts: its checkpointed offset if
        that lies in [log start, log end] and was recorded for this log, else the log start."""
        start, end = plog.log_start_offset, plog.log_end_offset
        with self._lock:
            recorded_for = self._logs.setdefault(key, plog)
            offset = self._offsets.get(key)
            if offset is None:
                return start
            if recorded_for is not plog or not start <= offset <= end:
                log.info("%s-%d: cleaner checkpoint %d is not in this log's range [%d, %d]: cleaning from "
                         "the log start", key[0], key[1], offset, start, end)
                del self._offsets[key]
                self._logs[key] = plog
                return start
            return offset

    def cleaned(self, key: Key, plog, end_offset: int) -> None:
        """Record that `plog` is clean below `end_offset` and write the file (after the round's
        swaps are durable)."""
        with self._lock:
            self._offsets[key] = end_offset
            self._logs[key] = plog
            write_checkpoint(self.path, self._offsets)
