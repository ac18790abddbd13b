"""All segment-mode partitions under one data directory, as Kafka's LogManager keeps them.

    <data-dir>/
        recovery-point-offset-checkpoint   text: "0", count, then "topic partition offset" lines
        log-start-offset-checkpoint        same format (segment/offset_checkpoint.py)
        .kafka_cleanshutdown               present only between a clean stop and the next start
        <topic>-<partition>/               one SegmentPartitionLog each, with its segments and
                                           its leader-epoch-checkpoint (leader_epoch_cache.py)
        <topic>-<partition>.<id>-delete/   a partition being deleted

Crash behaviour: checkpoints are written to a temp file, fsynced and renamed, so
each is either the old or the new version. Without the clean-shutdown marker,
every partition recovers from its checkpointed recovery point (0 if none). A
directory renamed for deletion, or of a partition no topic has, is removed after the next
start, in the background (detach_orphans; segment/partition_removal.py).

All partitions' segment files share one bound on open files (segment/open_files.py,
`--max-open-segment-files`), so the number of partitions is not bounded by RLIMIT_NOFILE.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from segment.leader_epoch_cache import write_epochs_round
from segment.log import LogConfig, LogOffline
from segment.log_store import LogStore
from segment.offset_checkpoint import read_checkpoint, write_checkpoint

from segment.open_files import OpenFiles
from segment.partition_removal import DELETE_SUFFIX, PartitionRemoval

from .partition_log import SegmentPartitionLog

log = logging.getLogger(__name__)

RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
# A clean stop fsyncs every log (three files a partition) from this many threads: concurrent
# fsyncs share the disk's cache flushes. 3,000 dirty files on this machine's disk: 4.1-4.4 s
# one after another, 0.21-0.24 s from 4-16 threads; a stop of 10,000 partitions that had each
# taken a record took 32 s one after another (py-spy: fsync), past the 15 s a launcher waits
# before SIGKILL, so the next start recovered every partition instead.
CLOSE_FLUSH_THREADS = 16


def split_partition_dir(name: str) -> tuple[str, int] | None:
    topic, sep, index = name.rpartition("-")
    if not sep or not topic or not index.isdigit():
        return None
    return topic, int(index)


class SegmentLogStore(LogStore):
    def __init__(self, data_dir: Path, max_open_files: int | None = None,
                 open_files: OpenFiles | None = None) -> None:
        """`max_open_files`: segment files held open at once (default: half of RLIMIT_NOFILE);
        `open_files`: a bound shared with the broker's commitlog store instead."""
        self.dir = Path(data_dir)
        self.open_files = open_files if open_files is not None else OpenFiles(max_open_files)
        self.dir.mkdir(parents=True, exist_ok=True)
        marker = self.dir / CLEAN_SHUTDOWN
        self.clean = marker.exists()
        if self.clean:
            marker.unlink()
        else:
            log.info("no clean-shutdown marker in %s: partitions recover from their recovery points", self.dir)
        self._recovery = read_checkpoint(self.dir / RECOVERY_CHECKPOINT)
        self._log_start = read_checkpoint(self.dir / LOG_START_CHECKPOINT)
        # Partitions deleted before a crash: removed with the orphans (detach_orphans), in the
        # background rather than before the broker answers.
        self._leftovers = list(self.dir.glob(f"*{DELETE_SUFFIX}"))
        self.logs: dict[tuple[str, int], SegmentPartitionLog] = {}
        self._checkpoint_lock = threading.Lock()

    def _path(self, topic: str, partition: int) -> Path:
        return self.dir / f"{topic}-{partition}"

    def prepare_partition(self, topic: str, partition: int, config: LogConfig) -> SegmentPartitionLog:
        key = (topic, partition)
        return SegmentPartitionLog(
            self._path(topic, partition), config, self._recovery.get(key, 0), self._log_start.get(key, 0), self.clean,
            self._checkpoint, self.open_files,
        )

    def discard_prepared(self, plog: SegmentPartitionLog) -> None:
        plog.close()

    def install_partition(self, plog: SegmentPartitionLog) -> SegmentPartitionLog:
        key = split_partition_dir(plog.dir.name)
        return self.logs.setdefault(key, plog)

    def detach_partitions(self, keys: list[tuple[str, int]]) -> PartitionRemoval:
        closers = []
        with self._checkpoint_lock:  # a checkpoint in the flush thread must not write them back
            for key in keys:
                plog = self.logs.pop(key, None)
                if plog is not None:
                    closers.append(plog.close)
                self._recovery.pop(key, None)
                self._log_start.pop(key, None)
        return PartitionRemoval([self._path(*key) for key in keys], closers)

    def existing_partitions(self) -> list[tuple[str, int]]:
        out = []
        for path in self.dir.iterdir():
            if path.is_dir() and not path.name.endswith("-delete"):
                parsed = split_partition_dir(path.name)
                if parsed is not None:
                    out.append(parsed)
        return sorted(out)

    def flush(self) -> None:
        """fsync every online log, checkpoint, then report a log that went offline doing it."""
        failed = None
        for plog in list(self.logs.values()):
            if plog.offline is None:
                try:
                    plog.flush()
                except LogOffline as exc:
                    failed = failed or exc
        self._checkpoint()
        if failed is not None:
            raise failed

    def flush_partitions(self, keys: list[tuple[str, int]]) -> list[tuple[str, int]]:
        """flush() for these logs alone: each partition has files of its own."""
        failed = None
        for key in keys:
            plog = self.logs.get(key)
            if plog is not None and plog.offline is None:
                try:
                    plog.flush()
                except LogOffline as exc:
                    failed = failed or exc
        self._checkpoint()
        if failed is not None:
            raise failed
        return keys

    def _checkpoint(self) -> None:
        """Write every log's recovery point and log start. Also called by a log whose
        truncate_fully_and_start_at moved both, from the event loop while the periodic flush
        may be checkpointing in a worker thread: the lock keeps their temp files apart."""
        with self._checkpoint_lock:
            for key, plog in list(self.logs.items()):  # list(): the periodic flush runs in a thread
                self._recovery[key] = plog.recovery_point
                self._log_start[key] = plog.log_start_offset
            write_checkpoint(self.dir / RECOVERY_CHECKPOINT, self._recovery)
            write_checkpoint(self.dir / LOG_START_CHECKPOINT, self._log_start)

    def close(self) -> None:
        # The epoch files of all logs in one round (two syncs), not two fsyncs each in their closes.
        write_epochs_round([plog.epochs for plog in self.logs.values() if plog.offline is None])
        with ThreadPoolExecutor(CLOSE_FLUSH_THREADS, thread_name_prefix="close-flush") as pool:
            # close() fsyncs the log (a failed fsync takes it offline: no marker below)
            for _ in pool.map(SegmentPartitionLog.close, list(self.logs.values())):
                pass
        self._checkpoint()
        if any(plog.offline is not None for plog in self.logs.values()):
            log.warning("a log is offline: no clean-shutdown marker, the next start recovers")
            return
        (self.dir / CLEAN_SHUTDOWN).touch()
