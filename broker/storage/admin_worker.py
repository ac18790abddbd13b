"""One thread for topic admin's file work, so the event loop keeps answering while it runs.

Creating a partition (directories, files, recovering what is there), writing topics.json and
removing a deleted partition's files each block on the disk for a millisecond or more; a
request creating 500 topics or deleting a 1,000-partition topic did all of it on the event
loop and no other client was answered for seconds (issue 13 item 5). Here that work runs in
one dedicated thread, in the order it was submitted: a deleted topic's directories are renamed
before a later CreateTopics of the same name builds its own.

Deleted partitions go as Kafka deletes a log (segment/partition_removal.py): renamed at once,
removed after `file.delete.delay.ms`; the removal's `reclaim` (the commitlog store frees its
shared files) then runs on the event loop, where the store is used.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from segment.partition_removal import PartitionRemoval

log = logging.getLogger(__name__)


def _logged(fn: Callable[[], None], what: str) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except Exception:
            log.exception("%s failed", what)
    return run


class AdminWorker:
    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="topic-admin")
        self._waiting: dict[asyncio.TimerHandle, tuple[PartitionRemoval, Callable[[], None] | None]] = {}

    async def run(self, fn, *args):
        """fn(*args) in the worker thread, after everything submitted before it."""
        return await asyncio.wrap_future(self._executor.submit(fn, *args))

    def retire(self, removal: PartitionRemoval, reclaim: Callable[[], None] | None, delay_s: float) -> None:
        """Rename the removal's directories now (queued before any later work) and remove them
        after `delay_s` (the topic's file.delete.delay.ms); then `reclaim()` on the event loop.
        With no delay it needs no running loop (start-up)."""
        if not len(removal):
            return
        self._executor.submit(_logged(removal.rename, "renaming deleted partitions"))
        if delay_s <= 0:
            self._remove(removal, reclaim)
            return
        handle = asyncio.get_running_loop().call_later(delay_s, self._remove_due, removal, reclaim)
        self._waiting[handle] = (removal, reclaim)

    def _remove_due(self, removal: PartitionRemoval, reclaim: Callable[[], None] | None) -> None:
        self._waiting = {h: w for h, w in self._waiting.items() if w[0] is not removal}
        self._remove(removal, reclaim)

    def _remove(self, removal: PartitionRemoval, reclaim: Callable[[], None] | None) -> None:
        done = self._executor.submit(_logged(removal.remove, "removing deleted partitions"))
        if reclaim is not None:
            loop = asyncio.get_running_loop()
            done.add_done_callback(
                lambda _f: loop.call_soon_threadsafe(_logged(reclaim, "freeing removed partitions' files")))

    async def close(self) -> None:
        """Remove what still waits for its delay, finish the queue, stop the thread (before the
        stores close: a removal checkpoints the commitlog store)."""
        for handle, (removal, _reclaim) in list(self._waiting.items()):
            handle.cancel()
            self._executor.submit(_logged(removal.remove, "removing deleted partitions"))
        self._waiting.clear()
        await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown)
