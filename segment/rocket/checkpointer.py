"""When the store checkpoints, and what a checkpoint fsyncs and records (the file: checkpoint.py).

A full checkpoint fsyncs every consume queue and the index, then records how far they and the
commitlog are durable, each partition's log start and each open log's counted size. It runs
once a minute (CHECKPOINT_INTERVAL_S), or once the commitlog grew by a file, in the background,
and on flush(), after a partition's removal and on close: it bounds how much commitlog a
recovery re-reads, and no acknowledgement waits for it. In between, the periodic flush only
fsyncs the commitlog and records that (`flushed`), and a moved log start is written with the
last checkpoint's positions (`persist_log_starts`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from segment.leader_epoch_cache import write_epochs_round

from .checkpoint import Checkpoint, MeasuredSize, write_checkpoint
from .commitlog import CommitLog
from .consume_queue import ConsumeQueue
from .dispatch import Dispatcher
from .index_file import IndexService
from .partition_log import RocketPartitionLog

# The checkpoint fsyncs every consume-queue file written since the last one (two per queue): at
# most every minute, as Kafka's log.flush.offset.checkpoint.interval.ms and RocketMQ's thorough
# consume-queue flush, or once the commitlog grew by one of its files since, so a crash
# re-dispatches at most about a file's worth (every 10 s cost 20,000 fsyncs each time at 10,000
# partitions: bench/README.md, "Disk-bound").
CHECKPOINT_INTERVAL_S = 60.0

log = logging.getLogger(__name__)


class Checkpointer:
    def __init__(self, store_dir: Path, last: Checkpoint, *, commitlog: CommitLog, index: IndexService | None,
                 dispatcher: Dispatcher, queues: dict[tuple[str, int], ConsumeQueue],
                 logs: dict[tuple[str, int], RocketPartitionLog], log_start: dict[tuple[str, int], int],
                 fsync_commitlog: Callable[[], int], go_offline: Callable[[str], Exception]) -> None:
        """`last`: the checkpoint read at open. `queues`, `logs`, `log_start`: the store's own
        maps, read at each checkpoint. `fsync_commitlog`, `go_offline`: the store's, which
        stops serving when an fsync fails."""
        self._dir = store_dir
        self.last = last
        self._commitlog = commitlog
        self._index = index
        self._dispatcher = dispatcher
        self._queues = queues
        self._logs = logs
        self._log_start = log_start
        self._fsync_commitlog = fsync_commitlog
        self._go_offline = go_offline
        self._lock = threading.Lock()  # the admin worker, the flush worker and the loop all checkpoint
        self._taken_at = time.monotonic()

    def due(self) -> bool:
        """Units were dispatched since the last checkpoint, and either CHECKPOINT_INTERVAL_S
        passed or they fill a commitlog file."""
        behind = self._dispatcher.dispatched - self.last.commitlog
        return behind > 0 and (behind >= self._commitlog.file_size
                               or time.monotonic() - self._taken_at >= CHECKPOINT_INTERVAL_S)

    def take(self) -> None:
        """fsync every queue and the index, then record how far they and the commitlog go."""
        with self._lock:
            # Sizes before the position: batches dispatched between the two are counted again at
            # open, never lost from the count (each log's `counted` is one consistent moment).
            # A queue not opened since the last checkpoint keeps its count (recovery's re-dispatch
            # into it is checked against the count when its log opens).
            sizes = {key: known for key, known in self.last.sizes.items() if key in self._queues}
            sizes.update((key, plog.counted) for key, plog in list(self._logs.items()) if plog.counted is not None)
            position = self._dispatcher.dispatched  # read before the index: extra index entries are harmless
            index_file, index_count = self._index.position() if self._index is not None else (None, 0)
            # new epochs since the last (leader_epoch_cache.py): one sync for all, not two fsyncs each
            write_epochs_round([plog.epochs for plog in list(self._logs.values())])
            self._fsync_commitlog()
            try:
                for q in list(self._queues.values()):
                    q.flush()
                if self._index is not None:
                    self._index.flush()
            except OSError as exc:
                raise self._go_offline(f"fsync of a queue or index failed: {exc.strerror or exc}") from exc
            self.last = Checkpoint(position, index_file, index_count, dict(self._log_start),
                                   max(position, self._commitlog.flushed_pos), sizes)
            self._taken_at = time.monotonic()  # a file that cannot be written waits for the next round
            write_checkpoint(self._dir, self.last)

    def take_if_due(self) -> bool:
        """A checkpoint, if one is due (the background's and the periodic flush's); whether one
        was. A file the disk cannot take (ENOSPC) is a warning: the last checkpoint stands, a
        recovery re-dispatches from it, the next round writes one. `take` on its own (close,
        a removal) raises it, so no clean stop trusts a stale checkpoint."""
        if not self.due():
            return False
        try:
            self.take()
        except OSError as exc:
            log.warning("commitlog checkpoint not written (a recovery re-dispatches from the last one): %s", exc)
        return True

    def flushed(self, durable: int) -> None:
        """The commitlog is fsynced below `durable` (the periodic flush): recorded, nothing else fsynced."""
        with self._lock:
            if durable > self.last.flushed:
                self.last.flushed = durable
                try:
                    write_checkpoint(self._dir, self.last)
                except OSError as exc:  # a full disk: the commitlog is durable, recovery just re-reads more
                    log.warning("commitlog checkpoint not written (a recovery re-dispatches from the last one): %s",
                                exc)

    def persist_log_starts(self) -> None:
        """Write the current log start offsets with the last checkpoint's positions (no fsync of data)."""
        with self._lock:
            self.last.log_start = dict(self._log_start)
            write_checkpoint(self._dir, self.last)

    def size_of(self, key: tuple[str, int]) -> MeasuredSize | None:
        return self.last.sizes.get(key)
