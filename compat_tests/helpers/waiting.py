"""Waiting on conditions, never on the clock alone.

A test that sleeps a fixed time and then looks bets that the machine is as idle as the one it
was written on; under the parallel suite (make test runs several modules at once on two cores)
such bets were lost. So a test waits for what it needs to see, with a deadline that only says
when to give up:

- `wait_until(check)`: poll until `check()` returns something true and return it.
- `holds_throughout(seconds, check)`: a "nothing happens" claim (a checkpoint unmoved before a
  shutdown, no error line while a fetch stalls) needs a window; the check runs all through it, so a breach
  fails at once and the window is as long as the claim, not a guess at how slow the machine is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_S = 0.05


def wait_until(check: Callable[[], T], what: str, timeout: float = 30.0, interval: float = POLL_S) -> T:
    """Return check()'s first true result; AssertionError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}; last: {result!r}")
        time.sleep(interval)


def holds_throughout(seconds: float, check: Callable[[], object], what: str, interval: float = POLL_S) -> None:
    """Assert check() stays true for `seconds`, checked every `interval` s and once at the end."""
    end = time.monotonic() + seconds
    while True:
        assert check(), f"{what}: no longer true {seconds - (end - time.monotonic()):.2f} s into {seconds:g} s"
        if time.monotonic() >= end:
            return
        time.sleep(min(interval, max(0.0, end - time.monotonic())))
