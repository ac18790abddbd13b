"""GroupCommit when the fsync or the writes before it fail: every waiter gets the error, none
hangs and none is told its data is durable."""

from __future__ import annotations

import asyncio

import pytest

from broker.storage.group_commit import GroupCommit
from segment.log import LogOffline


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5))


def test_a_failed_fsync_fails_every_waiter_and_later_syncs_do_not_hang():
    # As the engines behave: after one failed fsync the log is offline and every later flush
    # raises too (a second fsync could succeed without the data the first one lost).
    calls = []

    def flush():
        calls.append(1)
        raise LogOffline("fsync failed: EIO" if len(calls) == 1 else "offline")

    commit = GroupCommit(flush, lambda: 7)

    async def scenario():
        results = await asyncio.gather(commit.sync(), commit.sync(), commit.sync(), return_exceptions=True)
        assert all(isinstance(r, LogOffline) for r in results), results
        with pytest.raises(LogOffline):
            await commit.sync()

    run(scenario())
    assert len(calls) >= 2  # the waiters queued behind the failed fsync got one of their own


def test_failed_writes_before_the_fsync_fail_the_waiter_instead_of_hanging():
    ends = iter([LogOffline("writing appended units failed: ENOSPC"), 3])

    def end():
        value = next(ends)
        if isinstance(value, Exception):
            raise value
        return value

    commit = GroupCommit(lambda: None, end)

    async def scenario():
        with pytest.raises(LogOffline):
            await commit.sync()
        assert await commit.sync() == 3

    run(scenario())
