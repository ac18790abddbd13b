"""Group commit: many acknowledgements waiting on one fsync.

A produce that must be durable before its ack calls `sync()`. If no fsync is
running one starts now; if one is running, the caller waits for the next one,
which starts as soon as the running one ends and covers every append made in
between. Under load N producers share one fsync instead of paying N; with
pipelined produce requests (server.py) so do the requests of one producer.

`sync()` returns the log end offset the fsync covered, read on the event loop
just before it started: every append below it was written before the fsync
began. Appends made while it runs are not covered, so the caller publishes up
to that offset, not to the log end it sees when it wakes.

The broker keeps one per hosted partition (`PartitionCommits`), dropped when the
partition stops being hosted here.
"""

from __future__ import annotations

import asyncio
from typing import Callable


class GroupCommit:
    def __init__(self, flush: Callable[[], None], end: Callable[[], int]) -> None:
        self._flush = flush
        self._end = end
        self._running: asyncio.Future | None = None
        self._next: asyncio.Future | None = None

    async def sync(self) -> int:
        loop = asyncio.get_running_loop()
        if self._next is None:
            self._next = loop.create_future()
        waiting = self._next
        if self._running is None:
            self._start(loop)
        return await asyncio.shield(waiting)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        done, self._next = self._next, None
        try:
            covered = self._end()
        except Exception as exc:  # the writes the fsync would cover failed: so does every waiter
            done.set_exception(exc)
            return
        self._running = done
        task = loop.run_in_executor(None, self._flush)

        def finished(t: asyncio.Future) -> None:
            self._running = None
            if t.exception() is not None:
                done.set_exception(t.exception())
            else:
                done.set_result(covered)
            if self._next is not None:
                self._start(loop)

        task.add_done_callback(finished)


class PartitionCommits:
    """One GroupCommit per partition hosted here, keyed by (topic, index).

    Each entry keeps the Partition it was made for: a partition deleted and created again under
    its name is a new Partition with a new log, and gets a GroupCommit of its own (the old one
    would fsync the old log). `forget` drops a partition's entry once it is no longer hosted.
    """

    def __init__(self, make: Callable[[object], GroupCommit]) -> None:
        self._make = make
        self._commits: dict[tuple[str, int], tuple[object, GroupCommit]] = {}

    async def sync(self, partition) -> int:
        """GroupCommit.sync for the partition's log."""
        key = (partition.topic, partition.index)
        made_for, commit = self._commits.get(key, (None, None))
        if made_for is not partition:
            commit = self._make(partition)
            self._commits[key] = (partition, commit)
        return await commit.sync()

    def forget(self, partition) -> None:
        key = (partition.topic, partition.index)
        if self._commits.get(key, (None,))[0] is partition:
            del self._commits[key]

    def __len__(self) -> int:
        return len(self._commits)
