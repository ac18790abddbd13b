"""The storage engines of one broker, one per storage mode, opened when first needed.

A topic's storage mode (`storage.mode` = segment | commitlog) is fixed when it is created:
its CreateTopics config if given, else the broker's `--storage-mode`. It is recorded in
topics.json, so changing the broker default later does not move existing topics. In a cluster
each broker chooses the layout of the replicas it holds (replica_layouts.py).

    mode        engine                          files under the data dir
    segment     segment.kafka SegmentLogStore   <topic>-<partition>/ (Kafka's layout)
    commitlog   segment.rocket RocketLogStore   commitlog-store/ (RocketMQ's layout)

Both engines can hold topics on one broker at the same time. An engine is opened at start-up
when it is the default, when a topic uses it, or when its files exist (so recovery runs and
partitions of topics that no longer exist are removed); otherwise it is opened by the first
topic created with it.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from segment.log import StorageError
from segment.log_store import LogStore
from segment.open_files import OpenFiles

log = logging.getLogger(__name__)

MODES = ("segment", "commitlog")
ROCKET_DIR = "commitlog-store"


def _open(mode: str, data_dir: Path, commitlog_options: dict, open_files: OpenFiles) -> LogStore:
    if mode == "segment":
        from segment.kafka.store import SegmentLogStore

        return SegmentLogStore(data_dir, open_files=open_files)
    if mode == "commitlog":
        from segment.rocket.store import RocketLogStore

        return RocketLogStore(data_dir, **commitlog_options, open_files=open_files)
    raise ValueError(f"unknown storage mode {mode!r}")


def files_exist(mode: str, data_dir: Path) -> bool:
    if mode == "commitlog":
        return (data_dir / ROCKET_DIR).exists()
    return True  # the segment layout has no directory of its own: always check it


class StorageModes:
    def __init__(self, data_dir: Path, default_mode: str, commitlog_options: dict | None = None,
                 max_open_files: int | None = None) -> None:
        """`commitlog_options`: RocketLogStore's file and index sizes (keyword arguments);
        `max_open_files`: how many per-partition files (segments', consume queues') both
        engines hold open together (segment/open_files.py; default half of RLIMIT_NOFILE)."""
        if default_mode not in MODES:
            raise ValueError(f"unknown storage mode {default_mode!r}")
        self.data_dir = Path(data_dir)
        self.commitlog_options = commitlog_options or {}
        self.open_files = OpenFiles(max_open_files)  # one bound: each engine taking half the limit would take all
        self.default_mode = default_mode
        self._stores: dict[str, LogStore] = {}

    def store(self, mode: str) -> LogStore:
        """The engine for `mode`, opened (and recovered) on first use."""
        store = self._stores.get(mode)
        if store is None:
            store = self._stores[mode] = _open(mode, self.data_dir, self.commitlog_options, self.open_files)
            store.on_pending_writes = self._write_at_end_of_turn
            log.info("opened %s storage under %s", mode, self.data_dir)
        return store

    def open_at_start(self, modes_in_use: set[str], wanted=None) -> dict[str, LogStore]:
        """Open the default engine, every engine a topic uses, and any whose files exist.
        `wanted(topic, partition)`: whether a partition on disk has a topic; the commitlog
        engine does not open the others (RocketLogStore), whose removal follows."""
        options = self.commitlog_options
        if wanted is not None:
            self.commitlog_options = {**options, "wanted": wanted}
        try:
            for mode in MODES:
                if mode == self.default_mode or mode in modes_in_use or files_exist(mode, self.data_dir):
                    self.store(mode)
        finally:
            self.commitlog_options = options
        return dict(self._stores)

    def opened(self) -> dict[str, LogStore]:
        return dict(self._stores)

    def commit_writes(self) -> None:
        """Write every engine's pending appends (LogStore.commit_writes): after each request."""
        for store in self._stores.values():
            store.commit_writes()

    def _write_at_end_of_turn(self) -> None:
        """An engine holds appends in memory: write them once this turn of the loop is done,
        whoever appended them (a request also writes them itself before it is answered). Off
        the loop (a tool, a test driving an engine) the caller writes them."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        loop.call_soon(self._write_pending)

    def _write_pending(self) -> None:
        try:
            self.commit_writes()
        except StorageError:
            pass  # the engine is offline and said so once; the next request answers the error

    def close(self) -> None:
        for store in self._stores.values():
            store.close()
        self._stores.clear()
