"""broker/groups/share/keyed_locks.py: one holder per key at a time, and no lock left behind."""

from __future__ import annotations

import asyncio

from broker.groups.share.keyed_locks import KeyedLocks


def test_holders_of_one_key_take_turns_and_the_map_empties():
    async def main():
        locks: KeyedLocks[str] = KeyedLocks()
        order = []

        async def use(key: str, name: str) -> None:
            async with locks.hold(key):
                order.append(f"{name} in")
                await asyncio.sleep(0)
                order.append(f"{name} out")

        await asyncio.gather(use("a", "1"), use("a", "2"), use("b", "3"))
        assert order.index("1 out") < order.index("2 in")  # same key: one after the other
        assert order.index("3 in") < order.index("1 out")  # another key: meanwhile
        assert len(locks) == 0

    asyncio.run(main())


def test_a_cancelled_waiter_leaves_no_lock():
    async def main():
        locks: KeyedLocks[str] = KeyedLocks()
        held, release = asyncio.Event(), asyncio.Event()

        async def holder() -> None:
            async with locks.hold("k"):
                held.set()
                await release.wait()

        first = asyncio.create_task(holder())
        await held.wait()
        waiter = asyncio.create_task(locks.hold("k").__aenter__())
        await asyncio.sleep(0)
        waiter.cancel()
        release.set()
        await first
        assert len(locks) == 0

    asyncio.run(main())
