"""The other half of the storage interface (log.py): a `LogStore` is one engine's files under a
data directory, and hands out the `PartitionLog` of each (topic, partition) it holds.

The broker opens, creates, detaches and removes partitions through it, commits the writes its
appends gather, and fsyncs through it (the group commit point); each engine (segment/kafka/store.py,
segment/rocket/store.py) says what its files are and what a crash leaves of them.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .log import LogConfig, PartitionLog

if TYPE_CHECKING:
    from segment.partition_removal import PartitionRemoval


class LogStore(abc.ABC):
    """One engine's files under a data directory."""

    logs: dict[tuple[str, int], PartitionLog]  # the open (installed) logs, set by each engine
    _leftovers: list[Path]  # directories found at open that no partition will use
    # Called when an append leaves writes pending (commit_writes) where there were none: the
    # broker writes them at the end of the event loop's turn, so an append made outside any
    # request (a log-dir move's copy, a coordinator's marker) is not left in memory either.
    on_pending_writes: Callable[[], None] | None = None

    def open_partition(self, topic: str, partition: int, config: LogConfig) -> PartitionLog:
        """Open (recovering if needed) or create the partition's log."""
        plog = self.logs.get((topic, partition))
        if plog is not None:
            return plog
        return self.install_partition(self.prepare_partition(topic, partition, config))

    def delete_partition(self, topic: str, partition: int) -> None:
        """Close and remove the partition's files."""
        removal = self.detach_partitions([(topic, partition)])
        removal.rename()
        removal.remove()
        self.reclaim()

    # Topic admin splits the two calls above so their file work runs in a worker thread while
    # the event loop keeps using the store (broker/storage/admin_worker.py):

    @abc.abstractmethod
    def prepare_partition(self, topic: str, partition: int, config: LogConfig) -> PartitionLog:
        """open_partition's file work, safe in a worker thread while the event loop uses the
        store: it touches only this partition's own files and returns a log the store does not
        know yet (install_partition hands it over)."""

    @abc.abstractmethod
    def discard_prepared(self, plog: PartitionLog) -> None:
        """In the worker: close what prepare_partition opened for a log never installed."""

    @abc.abstractmethod
    def install_partition(self, plog: PartitionLog) -> PartitionLog:
        """On the event loop: serve a prepared log (returns the one already open, if any)."""

    @abc.abstractmethod
    def detach_partitions(self, keys: list[tuple[str, int]]) -> PartitionRemoval:
        """On the event loop: forget these partitions at once (no flush, checkpoint or read of
        the store reaches them again); their files go later, through the returned removal
        (segment/partition_removal.py), in a worker thread."""

    def detach_orphans(self, hosted: set[tuple[str, int]]) -> PartitionRemoval:
        """On the event loop: detach_partitions for every partition on disk not in `hosted`
        (a create or delete that did not finish, a topic gone from the metadata), in one pass,
        with the leftover directories found at open."""
        removal = self.detach_partitions([key for key in self.existing_partitions() if key not in hosted])
        removal.directories += self._leftovers
        self._leftovers = []
        return removal

    def reclaim(self) -> None:
        """On the event loop, after a removal or a retention round: free shared files that only
        removed partitions or records below the log starts needed."""

    @abc.abstractmethod
    def existing_partitions(self) -> list[tuple[str, int]]:
        """(topic, partition) pairs found on disk."""

    def commit_writes(self) -> None:
        """Write to the files (the page cache) what appends still hold in memory.

        An engine may gather the appends of one request and write them together. The broker
        calls this after every request, before answering it, and before each flush it starts,
        so an acknowledged append survives the broker process dying and a flush covers it, and
        at the end of any loop turn that left some (on_pending_writes). Reads see pending
        appends without it. Engines that write on append need nothing here.
        """

    @abc.abstractmethod
    def flush(self) -> None:
        """fsync every open partition (group commit point): what was written when it started.
        Runs in a worker thread while the event loop appends."""

    def flush_partitions(self, keys: list[tuple[str, int]]) -> list[tuple[str, int]]:
        """fsync these partitions and record how far (flush.ms), in a worker thread; returns
        the partitions it flushed. An engine whose partitions share their files flushes them
        all: this default."""
        flushed = list(self.logs)
        self.flush()
        return flushed

    def background_flush_due(self) -> bool:
        """On the event loop, about every second (the broker's periodic flush): whether
        `background_flush` has work. Default: never."""
        return False

    def background_flush(self) -> None:
        """In a worker thread, once background_flush_due said so: durability work that no
        acknowledgement waits for, such as fsyncing derived files."""

    @abc.abstractmethod
    def close(self) -> None:
        """Flush, checkpoint and mark the shutdown clean."""
