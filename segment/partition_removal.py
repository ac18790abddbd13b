"""Partitions a store no longer serves, whose files go in two steps, as Kafka deletes a log.

A store detaches the partitions on the event loop (LogStore.detach_partitions: it forgets them
at once, nothing of it reaches them again) and hands back a PartitionRemoval; a worker thread
then `rename`s each directory to `<dir>.<uuid>-delete` — the name is free for a new partition
at once — and, after `file.delete.delay.ms`, `remove`s them: closes their files and deletes the
directories. The delay is Kafka's: a Fetch answer may still be sending bytes from those files
(os.sendfile on their descriptors), so they stay open until it has surely gone.

Crash behaviour: a `-delete` directory is removed by the next start of its store; a partition
directory not renamed yet belongs to no topic in the metadata and is removed at start-up as an
orphan. Either way the files go, and no live partition ever reads them.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from .storage_errors import LogOffline

log = logging.getLogger(__name__)

DELETE_SUFFIX = "-delete"


def doomed_name(directory: Path) -> Path:
    return directory.with_name(f"{directory.name}.{uuid.uuid4().hex}{DELETE_SUFFIX}")


class PartitionRemoval:
    """The file work of deleting some partitions: rename now, remove later; both in a worker
    thread, never on the event loop, and each called once."""

    def __init__(self, directories: list[Path], closers: list[Callable[[], None]] = (),
                 after_remove: Callable[[list[Path]], None] | None = None) -> None:
        """`closers` close the detached partitions' open files; `after_remove(directories)` runs
        once they are gone (the commitlog store checkpoints: the deleted queues' units are not
        re-dispatched)."""
        self.directories = list(directories)
        self._closers = list(closers)
        self._after_remove = after_remove
        self._doomed: list[Path] = []

    def __len__(self) -> int:
        return len(self.directories)

    def rename(self) -> None:
        for directory in self.directories:
            if directory.name.endswith(DELETE_SUFFIX):
                self._doomed.append(directory)  # already marked (found so at start-up)
                continue
            doomed = doomed_name(directory)
            try:
                os.replace(directory, doomed)
            except FileNotFoundError:
                continue  # never made on disk, or gone already
            except OSError as exc:
                log.warning("cannot rename %s for deletion (%s): removing it in place", directory, exc)
                doomed = directory
            self._doomed.append(doomed)

    def remove(self) -> None:
        for close in self._closers:
            try:
                close()
            except OSError as exc:
                log.warning("closing a deleted partition's files: %s", exc)
        self._closers = []
        for doomed in self._doomed:
            shutil.rmtree(doomed, ignore_errors=True)
        self._doomed = []
        if self._after_remove is not None:
            try:
                self._after_remove(self.directories)
            except (OSError, LogOffline) as exc:
                log.warning("after removing partitions: %s", exc)
