"""How late the event loop runs, and what held it when it was late.

Every request, timer and fsync answer of the broker waits for the one event-loop thread, so a
callback that keeps it for 30 ms adds 30 ms to every client's latency at that moment, and
nothing else in the broker would say so. This is measured the way Node's monitorEventLoopDelay
does it: a timer due every INTERVAL_S records how late it fires (`twinlog_event_loop_lag_seconds`,
metrics.py). A stall of S seconds delays the tick that falls due during it by up to S, so the
histogram counts stalls at their time share. Each wake-up of an idle loop costs ~90 us of CPU
on the 2-core VM of bench/README.md, so the period is 50 ms (0.2 % of a core idle, with the
watchdog's), not Node's 10 ms.

A tick that fires `stall_threshold_s` late or later is a stall and gets one warning line naming
what held the loop: every stall of threshold + INTERVAL_S or longer does, since a tick falls
due at least a threshold before it ends. The tick cannot know what held the loop (it runs after
the culprit has returned), and asyncio's debug mode, which times every callback, costs too
much to leave on. So a watchdog thread samples the loop thread's stack (sys._current_frames())
only while the pending tick is overdue by half the threshold or more, every tenth of the
threshold: it names a callback while it still runs, a loop that never comes back included, and
otherwise wakes once per half threshold. What no sample shows, a garbage collection and the
loop thread's wait for a CPU, the line takes from loop_pauses.py:

    WARNING broker.observability.loop_lag: event loop stalled: a timer ran 43 ms late (threshold
    10 ms; the loop's thread waited 0 ms for a CPU in the last 38 ms); running:
    KafkaConnection._serve (broker/net/server.py:241) > ... > encode_response (wire/protocol.py:289)
    > ... > write_int32 (kio/serial/writers.py:49) (4 of 5 samples), ...; GC: generation 2 38 ms
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable

from broker.observability.loop_pauses import CpuWait, GcPauses
from broker.observability.loop_stack import busy_threads, culprit, describe, in_select, runs

log = logging.getLogger(__name__)

INTERVAL_S = 0.05
MAX_SAMPLES = 50  # per stall: a stall of minutes keeps the first ones
SHOWN = 3  # distinct callbacks named in a stall's line
HUNG_S = 5.0  # a stall this long is logged by the watchdog, in case the loop never returns


class LoopLagMonitor:
    """The tick, the watchdog and the stall lines of one event loop (the module's docstring)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, stall_threshold_s: float,
                 observe: Callable[[float], object] | None = None, interval_s: float = INTERVAL_S,
                 hung_s: float = HUNG_S) -> None:
        """`observe`: where each tick's lag goes (the histogram), None: nowhere; a threshold of
        0: no stall lines, no watchdog. `hung_s`: the watchdog's own line for a stall so long."""
        self._loop = loop
        self._threshold = stall_threshold_s
        self._observe = observe
        self._interval = interval_s
        self._hung = hung_s
        self._due = 0.0  # when the pending tick is due (loop.time(), time.monotonic's clock)
        self._handle: asyncio.TimerHandle | None = None
        # The overdue tick's due time, the watchdog's stack samples, and its CPU-wait mark: a
        # (time, the loop thread's CPU wait) reading taken at its first sample.
        self._samples: tuple[float, list[tuple[str, str]], tuple[float, float]] = (0.0, [], (0.0, 0.0))
        self._gc = GcPauses()
        self._cpu_wait: CpuWait | None = None
        self._tick_mark = (0.0, 0.0)  # (time, the loop thread's CPU wait) at the last tick
        self._stopped = threading.Event()
        self._watchdog: threading.Thread | None = None

    def start(self) -> None:
        """From the loop's thread: its stack is the one the watchdog samples. With nowhere to
        observe and no threshold, nothing starts."""
        if self._observe is None and self._threshold <= 0:
            return
        self._schedule(self._loop.time())
        if self._threshold > 0:
            gc.callbacks.append(self._gc)
            self._cpu_wait = CpuWait()
            self._tick_mark = (self._loop.time(), self._cpu_wait.seconds())
            self._watchdog = threading.Thread(target=self._watch,
                                              args=(threading.get_ident(), threading.get_native_id()),
                                              name="loop-watchdog", daemon=True)
            self._watchdog.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._handle is not None:
            self._handle.cancel()
        if self._watchdog is not None:
            self._watchdog.join()
            gc.callbacks.remove(self._gc)
            if self._cpu_wait is not None:
                self._cpu_wait.close()

    def _schedule(self, now: float) -> None:
        # From now, not from the last due time: after a stall the next tick measures afresh
        # instead of firing a burst of late ones.
        self._due = now + self._interval
        self._handle = self._loop.call_at(self._due, self._tick)

    def _tick(self) -> None:
        now = self._loop.time()
        lag = now - self._due
        if self._observe is not None:
            self._observe(lag)
        if self._cpu_wait is not None:
            mark, self._tick_mark = self._tick_mark, (now, self._cpu_wait.seconds())
            if self._threshold <= lag:
                self._report(lag, now, mark)
        self._schedule(now)

    def _report(self, lag: float, now: float, tick_mark: tuple[float, float]) -> None:
        """One stall's line. The loop thread's wait for a CPU is counted from the watchdog's
        first sample, inside the stall; without one, from the tick before (`tick_mark`), which
        also counts waits from before the stall."""
        due, samples, mark = self._samples
        samples, mark = (list(samples), mark) if due == self._due else ([], tick_mark)
        # Samples of one culprit (loop_stack.culprit) are counted together, shown as the first.
        first: dict[str, str] = {}
        seen = Counter(first.setdefault(key, what) for key, what in samples)
        if seen:
            named = [f"{what} ({count} of {len(samples)} samples)" if i == 0 else f"{what} ({count})"
                     for i, (what, count) in enumerate(seen.most_common(SHOWN))]
            running = ", ".join(named) + (", ..." if len(seen) > SHOWN else "")
        else:
            # The watchdog wakes at half the threshold and the tick had not run by then: it
            # missed the stall only if it could not take the GIL or a CPU in time. Python code
            # gives the GIL up every switch interval, so without a CPU wait one call into C code
            # held it throughout.
            running = "not sampled: the watchdog got no turn (the GIL held by one call into C code, or no CPU free)"
        pauses = self._gc.between(self._due, now)
        collected = "; GC: " + ", ".join(f"generation {g} {took * 1000:.0f} ms" for g, took in pauses) if pauses else ""
        log.warning("event loop stalled: a timer ran %.0f ms late (threshold %.0f ms; the loop's thread waited "
                    "%.0f ms for a CPU in the last %.0f ms); running: %s%s", lag * 1000, self._threshold * 1000,
                    (self._tick_mark[1] - mark[1]) * 1000, (now - mark[0]) * 1000, running, collected)

    def _watch(self, loop_thread: int, loop_native_id: int) -> None:
        """The watchdog thread: sleeps until the pending tick is overdue by half the threshold;
        if it has not run by then, samples the loop's stack until it does."""
        every = max(self._threshold / 10, 0.001)
        loop_cpu_wait = CpuWait(loop_native_id)
        try:
            self._watch_ticks(loop_thread, loop_cpu_wait, every)
        finally:
            loop_cpu_wait.close()

    def _watch_ticks(self, loop_thread: int, loop_cpu_wait: CpuWait, every: float) -> None:
        while not self._stopped.is_set():
            due = self._due
            wait = due + self._threshold / 2 - time.monotonic()
            if wait > 0:
                self._stopped.wait(wait)
                continue
            samples: list[tuple[str, str]] = []
            hung_logged = False
            while self._due == due and not self._stopped.is_set():
                taken = sample(loop_thread) if len(samples) < MAX_SAMPLES else None
                if taken is not None:  # None: the late tick itself is running, the stall is over
                    if not samples:
                        self._samples = (due, samples, (time.monotonic(), loop_cpu_wait.seconds()))
                    samples.append(taken)
                if not hung_logged and time.monotonic() - due >= self._hung and (fresh := sample(loop_thread)):
                    hung_logged = True
                    log.warning("event loop has not run a timer for %.1f s; running now: %s",
                                time.monotonic() - due, fresh[1])
                self._stopped.wait(every)


def sample(loop_thread: int) -> tuple[str, str] | None:
    """What holds the loop now (loop_stack.py), as (culprit, description): the callback it runs,
    or, when it is in its selector, the threads that keep it from the GIL; None when it runs the
    tick (which reads the CPU wait in a call that lets the watchdog in)."""
    frames = sys._current_frames()
    frame = frames.get(loop_thread)
    if runs(frame, LoopLagMonitor._tick.__code__):
        return None
    if not in_select(frame):
        return culprit(frame), describe(frame)
    busy = busy_threads(frames, {loop_thread, threading.get_ident()})
    if not busy:
        # Not a callback of ours: the thread waits for the GIL (held by C code in some thread)
        # or for a CPU; the line's CPU-wait figure tells which.
        what = "no callback: the loop in its selector, no other thread running Python"
    else:
        what = "no callback: the loop waiting for the GIL, held by one of " + "; ".join(busy)
    return what, what
