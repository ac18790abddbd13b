"""The bytes the broker may hold for requests it has not handled yet, across all connections.

Kafka's `queued.max.request.bytes` (its SimpleMemoryPool, non-strict): a frame's whole size is
reserved when its size prefix arrives, before any of its body is read, and given back once the
request has been handled. A frame is admitted while anything is left, so the pool can run
over by at most one frame (socket.request.max.bytes) — but a frame that was admitted can
always complete: reserving as bytes arrive instead would let ten half-sent frames share the
budget and none of them finish. A connection whose frame is not admitted stops reading (the
transport's business) and waits in line; frames are granted in arrival order as memory
comes back.

One departure from Kafka: a frame of at most `always_admit` bytes is admitted even when the
pool is spent (and still counted). Kafka's pool, once peers that stopped mid-frame hold it,
mutes every connection, heartbeats and ApiVersions included, until connections.max.idle.ms
closes them; keeping small requests flowing keeps the broker answerable meanwhile. What that
can add is bounded by the connections times `always_admit`.

Sans-IO: no asyncio; the transport registers a callback and pauses/resumes its own reading.
"""

from __future__ import annotations

from collections import deque
from typing import Callable

UNBOUNDED = -1
ALWAYS_ADMIT_BYTES = 16 * 1024  # ApiVersions, Metadata, Heartbeat, OffsetCommit, most Fetches


class RequestMemoryPool:
    __slots__ = ("capacity", "available", "_always_admit", "_waiters")

    def __init__(self, capacity: int, always_admit: int = ALWAYS_ADMIT_BYTES) -> None:
        # Kafka's SocketServer: a pool only for a positive queued.max.request.bytes (-1 by default)
        self.capacity = capacity if capacity > 0 else UNBOUNDED
        self.available = capacity
        self._always_admit = always_admit
        self._waiters: deque[tuple[int, Callable[[], None]]] = deque()

    def try_reserve(self, size: int) -> bool:
        """Reserve size bytes if the pool admits them now; False means wait()."""
        if self.capacity == UNBOUNDED:
            return True
        if size <= self._always_admit or (self.available > 0 and not self._waiters):
            self.available -= size
            return True
        return False

    def wait(self, size: int, granted: Callable[[], None]) -> None:
        """Queue for size bytes; granted() is called once they are reserved for the caller."""
        self._waiters.append((size, granted))

    def cancel(self, granted: Callable[[], None]) -> None:
        self._waiters = deque(w for w in self._waiters if w[1] is not granted)

    def release(self, size: int) -> None:
        if self.capacity == UNBOUNDED or size == 0:
            return
        self.available += size
        while self._waiters and self.available > 0:
            wanted, granted = self._waiters.popleft()
            self.available -= wanted
            granted()

    @property
    def waiting(self) -> int:
        return len(self._waiters)
