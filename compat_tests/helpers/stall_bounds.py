"""Latency bounds that hold on a shared machine: the broker's stall recurs, the machine's noise does not.

A stall test (a health probe's longest wait while the broker does some large piece of work)
times two things at once: the broker's event loop, and the machine's scheduler. On an idle
machine the second is nothing; beside the parallel suite, or another engineer's tests, one
probe now and then waits half a second for a core (0.54 s seen against a 0.5 s bound, load
average 8 on 2 cores). Loosening the bound until noise never reaches it would let the stalls
these tests exist for (seconds, before the work left the event loop) pass too.

Two things tell them apart. First, what the kernel counts: each thread's schedstat holds the
time it spent runnable but without a CPU. A probe's wait less that time, for the broker's
event-loop thread and for the probing thread, is what the broker itself kept the probe
waiting: its own work on the loop (CPU or blocking I/O), not the machine's queue for the cores.
Probe waits here are measured so (`probe_wait`). A run beside three other engineers' tests
(load 8-12) failed three stall tests by raw waits of 0.54-1.23 s against 0.5 s bounds.

Second, recurrence: a stall is work the broker does every time it is asked,
while the scheduler's delays fall at random. So the measured operation runs again, afresh,
when an attempt exceeds the bound, and the bound must hold for one of ATTEMPTS: a broker that
stalls fails every attempt; noise would have to strike all of them. On an idle machine the
first attempt passes and nothing is repeated.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from compat_tests.helpers.broker_process import api_versions_roundtrip

ATTEMPTS = 3


def within_bound_once(attempt: Callable[[int], float], bound: float, what: str) -> list[float]:
    """Call attempt(0), attempt(1), ... (each returns its longest wait, in seconds) until one
    returns less than `bound`; return the waits seen. AssertionError after ATTEMPTS over it."""
    seen: list[float] = []
    for number in range(ATTEMPTS):
        seen.append(attempt(number))
        if seen[-1] < bound:
            return seen
    raise AssertionError(f"{what}: longest waits {[round(s, 3) for s in seen]} s, each over the {bound} s bound")


def _cpu_wait_s(pid: int, tid: int) -> float:
    """Seconds the thread has spent runnable but waiting for a CPU (/proc/<pid>/task/<tid>/schedstat:
    time on a CPU, time waiting in the run queue, time slices; in nanoseconds)."""
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


def probe_wait(broker, timeout: float) -> float:
    """One health probe (ApiVersions v0 on a new connection): how long the broker kept it
    waiting, in seconds; inf if it was refused or the broker is gone. The wall time, less what
    the broker's event-loop thread (its main thread) and this thread spent waiting for a CPU
    meanwhile: a request and its answer pass between the two in turn, so their waits add up."""
    me = (os.getpid(), threading.get_native_id())
    loop = (broker.pid, broker.pid)
    try:
        waited = _cpu_wait_s(*loop) + _cpu_wait_s(*me)
        started = time.monotonic()
        api_versions_roundtrip(broker.host, broker.port, timeout=timeout)
        wall = time.monotonic() - started
        waited = _cpu_wait_s(*loop) + _cpu_wait_s(*me) - waited
    except OSError:
        return float("inf")
    return max(wall - waited, 0.0)
