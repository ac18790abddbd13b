"""A read of the broker's state from an HTTP thread (a scrape, the console): run on the event loop.

Only the event loop changes the partitions, groups and stores, so the metrics port's threads
never walk them themselves: they hand the loop a read and wait for its answer, at most
`timeout_s`, so a stuck loop costs a 503 or a scrape without the broker's families, never a
held HTTP thread.

The read is handed over as a function, and its coroutine is made on the loop when the loop takes
it up. A read the thread gave up on before that (a busy loop, a loop that stopped) is never made:
a coroutine made in the thread and sent to a loop that never ran it would be dropped unawaited
("coroutine ... was never awaited"). A read the loop already began runs to its end (it yields
the loop every metrics_collector.CHUNK items) and its answer is dropped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Awaitable, Callable, TypeVar

T = TypeVar("T")


class LoopBusy(Exception):
    """The event loop did not answer within the timeout, or has stopped."""


def read_on_loop(loop: asyncio.AbstractEventLoop, read: Callable[[], Awaitable[T]], timeout_s: float) -> T:
    """`read()`'s result, awaited on `loop`, from another thread; or LoopBusy."""
    answer: concurrent.futures.Future[T] = concurrent.futures.Future()

    def start() -> None:
        if not answer.set_running_or_notify_cancel():
            return  # the thread gave up before the loop came to it
        task = asyncio.ensure_future(read())
        task.add_done_callback(lambda done: _settle(answer, done))

    try:
        loop.call_soon_threadsafe(start)
    except RuntimeError:  # the loop is closed: the broker is stopping
        raise LoopBusy("the broker's event loop has stopped") from None
    try:
        return answer.result(timeout_s)
    except concurrent.futures.TimeoutError:
        answer.cancel()
        raise LoopBusy(f"the broker's event loop did not answer within {timeout_s:.0f} s") from None


def _settle(answer: concurrent.futures.Future[T], done: asyncio.Future[T]) -> None:
    if done.cancelled():  # the loop is shutting down
        answer.set_exception(LoopBusy("the broker's event loop stopped before answering"))
    elif (error := done.exception()) is not None:
        answer.set_exception(error)
    else:
        answer.set_result(done.result())
