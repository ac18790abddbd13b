"""Stopping our background tasks for sure.

One cancel() is not always enough on Python 3.11: asyncio.wait_for, which aetcd uses while
setting up a watch, can swallow a cancellation that lands just as the awaited future completes
(CPython gh-86296, fixed in 3.12), leaving the task running. So cancel again until it is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

RECANCEL_INTERVAL_S = 0.1


async def cancel_and_wait(tasks: Iterable[asyncio.Task]) -> None:
    tasks = list(tasks)
    pending = {t for t in tasks if not t.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=RECANCEL_INTERVAL_S)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()
