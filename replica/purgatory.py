"""Requests parked on one partition until its state moves: Kafka's delayed produce and fetch.

- A produce with acks=all waits until the high watermark passes its last offset
  (`wait_for_high_watermark`): it completes when the HW reaches the offset, fails with the
  partition's error when the partition stops being leader, and gives up at the request's
  timeout (REQUEST_TIMED_OUT).
- A fetch long-poll waits for "anything new" (`add_data_waiter`): for a follower, which reads
  up to the LEO, an append; for a consumer, which reads up to the HW, also a HW move. A HW
  move brings a follower nothing to read, so it does not wake one, as in Kafka: with two
  followers, each one's fetch that moved the HW woke the other's long poll, which read every
  partition of its request again only to park once more.

Waiters are futures on the event loop; the partition calls `high_watermark_moved`,
`data_arrived` and `high_watermark_advanced` from the loop. The produce waiters are kept in a heap by offset, so a HW move
completes exactly the waiters it satisfies without looking at the others.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools

from .partition_errors import PartitionError
from wire.error_codes import ErrorCode


class PartitionPurgatory:
    def __init__(self) -> None:
        self._by_offset: list[tuple[int, int, asyncio.Future]] = []
        self._order = itertools.count()  # ties in the heap never compare futures
        self._data_waiters: list[asyncio.Future] = []  # consumers': woken by appends and HW moves
        self._log_end_waiters: list[asyncio.Future] = []  # followers': woken by appends

    # ----- delayed produce -----------------------------------------------------

    async def wait_for_high_watermark(self, offset: int, high_watermark: int, timeout_s: float) -> ErrorCode | None:
        """Until the HW is >= offset (at once if it already is): None, or Kafka's error
        that ended the wait."""
        if high_watermark >= offset:
            return None
        fut = asyncio.get_running_loop().create_future()
        heapq.heappush(self._by_offset, (offset, next(self._order), fut))
        try:
            await asyncio.wait((fut,), timeout=timeout_s)  # not wait_for: see broker/handlers/fetch.py
        finally:
            fut.cancel()
        if fut.cancelled():
            return ErrorCode.request_timed_out
        exc = fut.exception()
        if exc is not None:
            return exc.code if isinstance(exc, PartitionError) else ErrorCode.unknown_server_error
        return None

    def high_watermark_moved(self, high_watermark: int) -> None:
        heap = self._by_offset
        while heap and heap[0][0] <= high_watermark:
            _, _, fut = heapq.heappop(heap)
            if not fut.done():
                fut.set_result(None)

    def fail_produce_waiters(self, exc: Exception) -> None:
        """The partition stopped leading: no waiter's offset can be acknowledged by it."""
        waiting, self._by_offset = self._by_offset, []
        for _, _, fut in waiting:
            if not fut.done():
                fut.set_exception(exc)

    # ----- delayed fetch -------------------------------------------------------

    def add_data_waiter(self, fut: asyncio.Future, reads_to_log_end: bool = False) -> None:
        """`reads_to_log_end`: a follower's fetch, which a HW move does not wake."""
        (self._log_end_waiters if reads_to_log_end else self._data_waiters).append(fut)

    def discard_data_waiter(self, fut: asyncio.Future) -> None:
        for waiters in (self._data_waiters, self._log_end_waiters):
            try:
                waiters.remove(fut)
                return
            except ValueError:
                pass

    def data_arrived(self) -> None:
        """An append, or a change every waiter must see (leadership, a HW taken from the leader)."""
        waiters = self._data_waiters + self._log_end_waiters
        self._data_waiters, self._log_end_waiters = [], []
        _wake(waiters)

    def high_watermark_advanced(self) -> None:
        """The HW moved with nothing appended: only what consumers may read grew."""
        waiters, self._data_waiters = self._data_waiters, []
        _wake(waiters)


def _wake(waiters: list[asyncio.Future]) -> None:
    for fut in waiters:
        if not fut.done():
            fut.set_result(None)
