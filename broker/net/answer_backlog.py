"""The answers of one connection that wait behind a deferred one, written in request order.

A durable produce is answered once its fsync is done (dispatch.py returns a coroutine that makes
the answer); the requests pipelined behind it are handled meanwhile, and their answers queue
here behind it. Each answer is written as soon as it and every answer before it are ready, in
the same pass of the event loop that made it ready: the deferred answer's own task writes it
(and the ready answers after it) as it ends. A writer task of its own would wait for that task
and then be woken, two more passes of a busy loop for every acknowledgement. Only an answer
that cannot go out at once (the transport asked the writer to pause, or the answer holds file
regions or is large: AnswerWriter.write_now) is written by a task, which goes on with the ones
after it.

The deferred answers' tasks are not the connection's: a client that leaves does not cancel
them, so what their requests appended is still published after the fsync; their answers are
then dropped (the transport is closing).

At most MAX_BACKLOG answers wait: `add` waits for room, and meanwhile the connection reads no
more requests (its request queue fills up, server.py).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from broker.api.dispatch import Chunks
from broker.net.answer_writer import AnswerWriter

if TYPE_CHECKING:
    from broker.observability.metrics import RequestInstruments

MAX_BACKLOG = 32  # answers waiting behind an fsync; beyond this the connection stops reading
Making = Coroutine[Any, Any, tuple["Chunks | None", float]]  # a deferred answer being made


class _Entry:
    __slots__ = ("instruments", "received", "chunks", "ready", "done")

    def __init__(self, instruments: RequestInstruments | None, received: float) -> None:
        self.instruments = instruments
        self.received = received  # time.perf_counter() when its frame was read
        self.chunks: Chunks | None = None  # None: nothing to write (acks=0)
        self.ready = 0.0  # time.perf_counter() when the answer was made
        self.done = False


class AnswerBacklog:
    def __init__(self, answers: AnswerWriter, failed: Callable[[Exception], None]) -> None:
        """`failed`: what to do when making or writing an answer raised (close the connection)."""
        self._answers = answers
        self._failed = failed
        self._entries: deque[_Entry] = deque()
        self._writer: asyncio.Task[None] | None = None  # writing the head entry, which had to wait
        self._changed: asyncio.Future[None] | None = None  # someone waits for room or for the end
        self._making: set[asyncio.Task[None]] = set()  # deferred answers' tasks (kept referenced)
        self._closed = False

    def __len__(self) -> int:
        """Answers not yet written."""
        return len(self._entries)

    async def add(self, reply: Chunks | Making | None, instruments: RequestInstruments | None,
                  received: float) -> None:
        """Queue one request's answer: made already (`reply` is its chunks, or None), or being
        made (a coroutine, started at once as a task of its own, so it runs to the end even if
        this call is cancelled); waits for room while MAX_BACKLOG answers wait."""
        entry = _Entry(instruments, received)
        if asyncio.iscoroutine(reply):
            task = asyncio.ensure_future(self._make(entry, reply))
            self._making.add(task)
            task.add_done_callback(self._making.discard)
        else:
            entry.chunks, entry.ready, entry.done = reply, time.perf_counter(), True
        while len(self._entries) >= MAX_BACKLOG and not self._closed:
            await self._change()
        self._entries.append(entry)
        self._write_ready()

    async def emptied(self) -> None:
        """Wait until every queued answer is written (another request then sees their effects)."""
        while self._entries and not self._closed:
            await self._change()

    def close(self) -> None:
        """The connection is gone: nothing more is written; deferred answers are still made."""
        self._closed = True
        self._entries.clear()
        if self._writer is not None:
            self._writer.cancel()
        self._wake()

    async def _make(self, entry: _Entry, making: Making) -> None:
        try:
            entry.chunks, entry.ready = await making
        except Exception as exc:
            if not self._closed:
                self._failed(exc)
            self.close()
            return
        entry.done = True
        self._write_ready()

    def _write_ready(self) -> None:
        """Write the ready answers at the head now, until one must wait (a task writes that one
        and goes on from there) or the head is not ready yet."""
        entries = self._entries
        while self._writer is None and entries and entries[0].done and not self._closed:
            entry = entries[0]
            writing = time.perf_counter()
            more = len(entries) > 1 and entries[1].done and bool(entries[1].chunks)  # one send for both
            if entry.chunks and not self._answers.write_now(entry.chunks, more):
                self._writer = asyncio.ensure_future(self._write_waiting(entry, writing))
                return
            self._written(entry, writing)

    async def _write_waiting(self, entry: _Entry, writing: float) -> None:
        try:
            assert entry.chunks is not None
            await self._answers.send(entry.chunks)
        except asyncio.CancelledError:
            return
        except Exception as exc:
            self._failed(exc)
            self.close()
            return
        self._writer = None
        self._written(entry, writing)
        self._write_ready()

    def _written(self, entry: _Entry, writing: float) -> None:
        self._entries.popleft()
        if entry.chunks and entry.instruments is not None:
            entry.instruments.answer_written(entry.received, entry.ready, writing)
        self._wake()

    def _change(self) -> asyncio.Future[None]:
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        return self._changed

    def _wake(self) -> None:
        if self._changed is not None:
            if not self._changed.done():
                self._changed.set_result(None)
            self._changed = None
