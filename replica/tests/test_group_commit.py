"""GroupCommits: one fsync per flush group answers every partition waiting on it; failures reach
every waiter and none hangs; nothing is kept once no one waits."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Executor, Future

import pytest

from replica.group_commit import GroupCommits
from segment.log import LogOffline


class FakePartition:
    """What GroupCommits reads of a Partition: its flush group and log end."""

    def __init__(self, group: object, end: int) -> None:
        self.flush_group, self.log_end_offset = group, end


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5))


def test_partitions_of_one_group_share_an_fsync_and_each_gets_its_own_end():
    shared = object()
    flushes = []
    commits = GroupCommits(lambda: None, lambda group, partitions: flushes.append((group, list(partitions))))
    a, b, c = FakePartition(shared, 3), FakePartition(shared, 7), FakePartition(shared, 9)

    async def scenario():
        # the first starts a round at once; the two asking while it runs share the next one
        assert await asyncio.gather(commits.sync(a), commits.sync(b), commits.sync(c)) == [3, 7, 9]

    run(scenario())
    assert flushes == [(shared, [a]), (shared, [b, c])]
    assert len(commits) == 0  # pruned with its last round


def test_each_group_gets_its_own_fsync_and_they_run_together():
    started, release = [], threading.Event()

    def flush(group, partitions):
        started.append(group)
        release.wait(2)

    commits = GroupCommits(lambda: None, flush)
    x, y = FakePartition("x", 1), FakePartition("y", 2)

    async def scenario():
        waits = asyncio.gather(commits.sync(x), commits.sync(y))
        while len(started) < 2:  # both fsyncs are running at once, neither waits for the other
            await asyncio.sleep(0.001)
        release.set()
        assert await waits == [1, 2]

    run(scenario())
    assert sorted(started) == ["x", "y"]


def test_an_append_after_the_fsync_started_is_not_reported_covered():
    partition = FakePartition("g", 5)
    commits = GroupCommits(lambda: None, lambda group, partitions: None)

    async def scenario():
        waiting = asyncio.ensure_future(commits.sync(partition))
        await asyncio.sleep(0)  # the round read the end (5) and started its fsync
        partition.log_end_offset = 8  # appended while it runs
        assert await waiting == 5
        assert await commits.sync(partition) == 8

    run(scenario())


def test_a_failed_fsync_fails_every_waiter_and_later_syncs_do_not_hang():
    # As the engines behave: after one failed fsync the log is offline and every later flush
    # raises too (a second fsync could succeed without the data the first one lost).
    calls = []

    def flush(group, partitions):
        calls.append(1)
        raise LogOffline("fsync failed: EIO" if len(calls) == 1 else "offline")

    commits = GroupCommits(lambda: None, flush)
    p = FakePartition("g", 7)

    async def scenario():
        results = await asyncio.gather(commits.sync(p), commits.sync(p), commits.sync(p), return_exceptions=True)
        assert all(isinstance(r, LogOffline) for r in results), results
        with pytest.raises(LogOffline):
            await commits.sync(p)

    run(scenario())
    assert len(calls) >= 2  # the waiters queued behind the failed fsync got one of their own
    assert len(commits) == 0


def test_failed_writes_before_the_fsync_fail_the_waiter_instead_of_hanging():
    outcomes = iter([LogOffline("writing appended units failed: ENOSPC"), None])

    def prepare():
        outcome = next(outcomes)
        if outcome is not None:
            raise outcome

    commits = GroupCommits(prepare, lambda group, partitions: None)
    p = FakePartition("g", 3)

    async def scenario():
        with pytest.raises(LogOffline):
            await commits.sync(p)
        assert await commits.sync(p) == 3

    run(scenario())


class InlineExecutor(Executor):
    """Runs each job at once in the caller's thread: the passes of the loop are then counted
    without a worker thread's scheduling (and its wait for the GIL) in between."""

    def submit(self, fn, /, *args, **kwargs):
        done: Future = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            done.set_exception(exc)
        return done


def test_the_fsync_end_reaches_its_waiter_on_the_next_pass_of_the_loop():
    # Every pass of a busy event loop between the fsync's end and the answer is latency: the
    # worker's one call_soon_threadsafe answers the waiter's own future, and the waiter resumes
    # on the next pass; through run_in_executor's future, its callbacks, a shared shielded
    # future and a task per waiter it was the fourth.
    passes, returned_at = [0], []

    async def scenario():
        loop = asyncio.get_running_loop()

        def count():
            passes[0] += 1
            loop.call_soon(count)

        def flush(group, partitions):
            loop.call_soon(lambda: returned_at.append(passes[0]))  # runs on the pass after return

        commits = GroupCommits(lambda: None, flush)
        commits.executor = InlineExecutor()
        loop.call_soon(count)
        waiter = asyncio.ensure_future(commits.sync(FakePartition("g", 4)))  # a coroutine before
        assert await waiter == 4
        return passes[0] - returned_at[0]

    assert run(scenario()) <= 1


def test_a_cancelled_waiter_leaves_the_others_of_its_round_answered():
    release = threading.Event()
    commits = GroupCommits(lambda: None, lambda group, partitions: release.wait(2))
    a, b = FakePartition("g", 2), FakePartition("g", 5)

    async def scenario():
        first, second = commits.sync(a), commits.sync(b)
        first.cancel()
        release.set()
        assert await second == 5
        assert first.cancelled()

    run(scenario())
    assert len(commits) == 0
