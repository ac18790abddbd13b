"""One asyncio.Lock per key, kept only while someone holds or waits for it.

The share-partitions serialise the reads and writes of one key's state (group, topic,
partition) with it (the share-group state coordinator needs none: its coordinator runtime runs
the operations of a partition one at a time). A dict of locks created on first use and never
removed grew by one lock for every key ever touched, a deleted topic's and a gone group's
included; here a key's lock goes when its last holder or waiter is done, so the map holds only
the keys in use this moment.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class KeyedLocks(Generic[K]):
    def __init__(self) -> None:
        self._locks: dict[K, tuple[asyncio.Lock, int]] = {}  # key -> (its lock, holders + waiters)

    @contextlib.asynccontextmanager
    async def hold(self, key: K) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)
