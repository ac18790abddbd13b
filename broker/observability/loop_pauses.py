"""What holds the event loop without any callback of its own to blame: garbage collections and
the machine's scheduler. A stall line (loop_lag.py) names them beside its stack samples, since
neither shows in a sample.

- A collection holds the GIL from its start to its end, in whatever thread set it off, so the
  watchdog thread cannot sample during one; gc.callbacks times each, and those of GC_NOTED_S or
  more are kept.
- A loop thread that is runnable but waits for a CPU (other processes on the machine's cores)
  is as late as one that works. The kernel counts that wait per thread: the second field of
  /proc/self/task/<tid>/schedstat, in nanoseconds (as compat_tests/helpers/stall_bounds.py reads it).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque

GC_NOTED_S = 0.001


class GcPauses:
    """The recent collections of GC_NOTED_S or more, in any thread; a gc.callbacks entry, called
    at the start and the stop of each one."""

    def __init__(self) -> None:
        self._started = 0.0
        self._recent: deque[tuple[float, int, float]] = deque(maxlen=32)  # (ended, generation, seconds)

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        now = time.monotonic()
        if phase == "start":
            self._started = now
        elif now - self._started >= GC_NOTED_S:
            self._recent.append((now, info["generation"], now - self._started))

    def between(self, start: float, end: float) -> list[tuple[int, float]]:
        """(generation, seconds) of the collections that ended in [start, end]."""
        return [(generation, took) for ended, generation, took in tuple(self._recent) if start <= ended <= end]


class CpuWait:
    """A thread's time spent runnable without a CPU, read in a few microseconds (one pread of a
    descriptor kept open); 0 where /proc has no schedstat."""

    def __init__(self, native_id: int | None = None) -> None:
        """`native_id`: the thread's (threading.get_native_id()); None: the calling thread."""
        tid = native_id if native_id is not None else threading.get_native_id()
        try:
            self._fd: int | None = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
        except OSError:
            self._fd = None

    def seconds(self) -> float:
        if self._fd is None:
            return 0.0
        return int(os.pread(self._fd, 128, 0).split()[1]) / 1e9

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
