"""How the broker keeps a full disk from costing acknowledged data: a free-space floor for
produce, and warnings about refused writes that cannot flood the log.

The floor is Redpanda's `storage_min_free_bytes` (RocketMQ's store has the same idea as its
disk-full flag): a produce that would leave less than `min_free_bytes` free on the data
directory's filesystem is refused with KAFKA_STORAGE_ERROR before anything is appended. The
room below the floor is what everything that is not a client's batch still needs while the
disk is nearly full: consume-queue and index entries, checkpoints, `__consumer_offsets`
commits, recovery at the next start. DeleteRecords, DeleteTopics and retention free space,
and produce resumes by itself once free space is above the floor again. The engines still
refuse a write that finds no room (segment/file_io.py); the floor keeps that rare.

`statvfs` costs a system call; it is read at most every REFRESH_S, and the bytes accepted
since are subtracted, so a burst of produce requests cannot overshoot the floor by more
than one batch.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from segment.log import WriteRefused

log = logging.getLogger(__name__)

REFRESH_S = 0.1
WARN_EVERY_S = 10.0


class StorageHealth:
    def __init__(self, data_dir: Path, min_free_bytes: int) -> None:
        self._dir = str(data_dir)
        self.min_free_bytes = min_free_bytes
        self._free = 0
        self._read_at = float("-inf")
        self._warned_at: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def free_bytes(self) -> int:
        now = time.monotonic()
        if now - self._read_at >= REFRESH_S:
            st = os.statvfs(self._dir)
            self._free, self._read_at = st.f_bavail * st.f_frsize, now
        return self._free

    def claim(self, nbytes: int, what: str) -> None:
        """Count `nbytes` about to be appended, or raise WriteRefused if they would take the
        filesystem below the floor."""
        if self.min_free_bytes <= 0:
            return
        free = self.free_bytes()
        if free - nbytes < self.min_free_bytes:
            raise WriteRefused(
                f"{what}: {free} bytes free on {self._dir}, a {nbytes}-byte batch would go below "
                f"the {self.min_free_bytes}-byte floor (--min-free-bytes)")
        self._free = free - nbytes

    def warn(self, fmt: str, *args) -> None:
        """log.warning, at most once per WARN_EVERY_S for each message format; the next line
        says how many were left out (a client retrying into a full disk writes one request
        per retry.backoff.ms)."""
        now = time.monotonic()
        if now - self._warned_at.get(fmt, float("-inf")) < WARN_EVERY_S:
            self._suppressed[fmt] = self._suppressed.get(fmt, 0) + 1
            return
        self._warned_at[fmt] = now
        skipped = self._suppressed.pop(fmt, 0)
        suffix = f" ({skipped} more like it in the last {WARN_EVERY_S:.0f} s not logged)" if skipped else ""
        log.warning(fmt + "%s", *args, suffix)
