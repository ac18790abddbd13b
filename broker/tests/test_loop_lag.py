"""The loop-lag monitor (broker/observability/loop_lag.py) on a real event loop of its own, with
real stalls made by the test's own callbacks (compat_tests/admin/test_loop_stalls.py has the broker):

- each tick's lag is observed; a callback that holds the loop 200 ms makes one tick 190 ms or
  more late, and the stall's warning names that callback, whether it waits in a call that
  releases the GIL (a sleep) or spins in Python code;
- a loop held past `hung_s` is named by the watchdog while the callback still runs;
- a full collection inside a stall is named in its line (the watchdog cannot run during one);
- a stall shorter than the threshold logs nothing;
- a loop thread that shares its core with another process's busy loop is counted waiting for a
  CPU, in CpuWait and in the stall's line;
- describe() names a task's coroutine and the innermost frame of what it awaits.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager

from broker.observability.loop_lag import LoopLagMonitor
from broker.observability.loop_pauses import CpuWait
from broker.observability.loop_stack import describe

INTERVAL_S = 0.01
LOGGER = "broker.observability.loop_lag"


def _sleep_on_the_loop(seconds: float) -> None:
    time.sleep(seconds)


def _spin_on_the_loop(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _collect_on_the_loop(heap: list) -> None:
    gc.collect()


def run_with_monitor(threshold_s: float, hold, *args, hung_s: float = 5.0) -> list[float]:
    """Run a fresh loop with a monitor for 10 ticks, then `hold(*args)` as a loop callback, then
    10 more ticks; the lags observed."""
    lags: list[float] = []

    async def main() -> None:
        monitor = LoopLagMonitor(asyncio.get_running_loop(), threshold_s, lags.append, INTERVAL_S, hung_s=hung_s)
        monitor.start()
        try:
            while len(lags) < 10:
                await asyncio.sleep(INTERVAL_S)
            asyncio.get_running_loop().call_soon(hold, *args)
            seen = len(lags)
            while len(lags) < seen + 10:
                await asyncio.sleep(INTERVAL_S)
        finally:
            monitor.stop()

    asyncio.run(main())
    return lags


def stall_lines(caplog, naming: str) -> list[str]:
    """The monitor's lines that name `naming`: on a busy machine a stall of the machine's own
    (the test's thread waiting for a CPU) may add others."""
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and naming in r.getMessage()]


def test_a_sleeping_callback_is_measured_and_named(caplog):
    caplog.set_level(logging.WARNING, LOGGER)
    lags = run_with_monitor(0.05, _sleep_on_the_loop, 0.2)
    assert max(lags) >= 0.19
    [line] = stall_lines(caplog, "_sleep_on_the_loop (broker/tests/test_loop_lag.py:")
    assert line.startswith("event loop stalled: a timer ran"), line


def test_a_callback_spinning_in_python_is_named(caplog):
    caplog.set_level(logging.WARNING, LOGGER)
    lags = run_with_monitor(0.05, _spin_on_the_loop, 0.2)
    assert max(lags) >= 0.19
    [line] = stall_lines(caplog, "_spin_on_the_loop (broker/tests/test_loop_lag.py:")
    assert line.startswith("event loop stalled: a timer ran"), line


def test_a_loop_that_does_not_come_back_is_named_while_it_runs(caplog):
    caplog.set_level(logging.WARNING, LOGGER)
    run_with_monitor(0.05, _sleep_on_the_loop, 0.6, hung_s=0.3)
    hung, stalled = stall_lines(caplog, "_sleep_on_the_loop")
    assert hung.startswith("event loop has not run a timer for"), hung
    assert stalled.startswith("event loop stalled"), stalled


def test_a_full_collection_in_a_stall_is_named(caplog):
    caplog.set_level(logging.WARNING, LOGGER)
    heap = [[i] for i in range(1_000_000)]  # about 50 ms to walk
    run_with_monitor(0.01, _collect_on_the_loop, heap)
    assert stall_lines(caplog, "GC: generation 2"), caplog.text


def test_a_short_hold_is_observed_but_not_logged(caplog):
    caplog.set_level(logging.WARNING, LOGGER)
    lags = run_with_monitor(1.0, _sleep_on_the_loop, 0.05)
    assert len(lags) >= 20 and max(lags) >= 0.04
    assert stall_lines(caplog, "_sleep_on_the_loop") == []


@contextmanager
def sharing_a_core(seconds: float):
    """This thread and a process spinning for `seconds` pinned to one core together."""
    core = min(os.sched_getaffinity(0))
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})  # pid 0: this thread alone, on Linux
    spin = (f"import os, time; os.sched_setaffinity(0, {{{core}}}); print(flush=True); "
            f"end = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass")
    proc = subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE)
    try:
        proc.stdout.readline()  # it is pinned and spinning
        yield
    finally:
        proc.wait()
        os.sched_setaffinity(0, mine)


def test_cpu_wait_counts_time_without_a_cpu():
    wait = CpuWait()
    try:
        before = wait.seconds()
        with sharing_a_core(0.4):
            _spin_on_the_loop(0.3)
        assert wait.seconds() - before >= 0.05
    finally:
        wait.close()


def _spin_beside_another_process(seconds: float) -> None:
    with sharing_a_core(seconds):
        _spin_on_the_loop(seconds)


def test_a_stall_for_want_of_a_cpu_says_so(caplog):
    caplog.set_level(logging.WARNING, LOGGER)
    run_with_monitor(0.05, _spin_beside_another_process, 0.3)
    [line] = stall_lines(caplog, "_spin_beside_another_process")
    waited = int(re.search(r"late \(threshold 50 ms; the loop's thread waited (\d+) ms for a CPU in the last \d+ ms\)", line).group(1))
    assert waited >= 50, line


async def _inner() -> str:
    await asyncio.sleep(0)
    return describe(sys._getframe())


async def _outer() -> str:
    return await _inner()


def test_describe_names_the_task_and_where_it_is():
    what = asyncio.run(_outer())
    assert what.startswith("_outer (broker/tests/test_loop_lag.py:"), what
    assert what.endswith(f"_inner (broker/tests/test_loop_lag.py:{_inner.__code__.co_firstlineno + 2})"), what
