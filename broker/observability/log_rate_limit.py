"""Repeated log lines, rate-limited: what one misbehaving client makes the broker say is bounded.

Every connection a peer breaks costs one warning ("closing connection from ...: malformed
..."), which is right for one bad client and wrong for a fuzzer: one heavy fuzz run grew a
broker log to 425 MB. Lines are counted per (logger, message template): the template is the
format string before its arguments, so "closing connection from %s: %s" is one kind of line
however many peers and reasons fill it in. At most `lines` of a kind pass per `interval_s`
window; the rest are counted, and the first line logged after the window ends is preceded by
one summary of that kind:

    WARNING broker.server: suppressed 12,345 lines like 'closing connection from %s: %s' in the last 60 s

A message logged preformatted (an f-string) is a kind of its own; such kinds are forgotten
when their window ends, and at most MAX_KINDS are tracked, so the filter's memory is bounded
too. The clock is injected for tests; the filter is thread-safe (executor threads log).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass

LINES_PER_INTERVAL = 200
INTERVAL_S = 60.0
MAX_KINDS = 4096

Kind = tuple[str, str]
_SUMMARY = "twinlog_rate_limit_summary"  # marks the summaries, which pass back through filter()


@dataclass(slots=True)
class _Window:
    started: float
    passed: int
    suppressed: int
    levelno: int


class RepeatedLineFilter(logging.Filter):
    """A handler filter; `emit` is how summaries are written (the handler's own `handle`)."""

    def __init__(self, emit: Callable[[logging.LogRecord], object], lines: int = LINES_PER_INTERVAL,
                 interval_s: float = INTERVAL_S, clock: Callable[[], float] = time.monotonic,
                 max_kinds: int = MAX_KINDS) -> None:
        super().__init__()
        self._emit = emit
        self._lines = lines
        self._interval = interval_s
        self._clock = clock
        self._max_kinds = max_kinds
        self._windows: dict[Kind, _Window] = {}
        self._next_end = float("inf")  # when the oldest window ends: no scan before then
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, _SUMMARY, False):
            return True  # our own summary, re-entering through the handler: never counted
        kind = (record.name, record.msg if isinstance(record.msg, str) else repr(record.msg))
        with self._lock:
            now = self._clock()
            summaries = self._ended(now) if now >= self._next_end else []
            window = self._windows.get(kind)
            if window is None:
                if len(self._windows) >= self._max_kinds:
                    self._forget_quiet()
                if len(self._windows) < self._max_kinds:
                    self._windows[kind] = _Window(now, 1, 0, record.levelno)
                    self._next_end = min(self._next_end, now + self._interval)
                allowed = True
            elif window.passed < self._lines:
                window.passed += 1
                allowed = True
            else:
                window.suppressed += 1
                window.levelno = max(window.levelno, record.levelno)
                allowed = False
        for summary in summaries:
            self._emit(summary)
        return allowed

    def _ended(self, now: float) -> list[logging.LogRecord]:
        """Summaries of the windows that are over and suppressed something; those windows restart
        empty (a kind that goes on being logged gets its next `lines` at once)."""
        out = []
        self._next_end = float("inf")
        for kind, window in list(self._windows.items()):
            if now - window.started < self._interval:
                self._next_end = min(self._next_end, window.started + self._interval)
                continue
            if window.suppressed:
                out.append(self._summary(kind, window, now))
            del self._windows[kind]
        return out

    def _forget_quiet(self) -> None:
        for kind, window in list(self._windows.items()):
            if not window.suppressed:
                del self._windows[kind]

    def _summary(self, kind: Kind, window: _Window, now: float) -> logging.LogRecord:
        name, template = kind
        return logging.makeLogRecord({
            "name": name, "levelno": window.levelno, "levelname": logging.getLevelName(window.levelno),
            "msg": "suppressed %s lines like %r in the last %.0f s",
            "args": (f"{window.suppressed:,}", template, now - window.started), _SUMMARY: True,
        })


def install(root: logging.Logger | None = None, **limits: Any) -> list[RepeatedLineFilter]:
    """Put a filter on every handler of the root logger (basicConfig's stream handler), so lines
    from every logger are limited, asyncio's own included."""
    root = root or logging.getLogger()
    filters = []
    for handler in root.handlers:
        f = RepeatedLineFilter(handler.handle, **limits)
        handler.addFilter(f)
        filters.append(f)
    return filters
