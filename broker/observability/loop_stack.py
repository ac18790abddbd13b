"""What the event loop's thread is running, in one line, read from a stack sample
(sys._current_frames()); and which other threads were running Python code meanwhile.

asyncio runs every callback from `Handle._run` (a Task's step too: the C step's first Python
frame is the task's coroutine, and each coroutine it awaits is the next frame in). The frame
just above `Handle._run` is therefore the callback that holds the loop, and the innermost
frame says what it is doing. Between them lie its awaits and calls; of those, the deepest
frame of our own code is shown (which handler, which log method called into a library), the
rest as "...":

    KafkaConnection._serve (broker/net/server.py:241) > ... > handle (broker/handlers/metadata.py:112)
    > ... > write_entity (kio/serial/_serialize.py:219)

A sample with no `Handle._run` frame caught the loop in its own code. In the selector's
`select` that means the loop was not running a callback at all: epoll had returned and the
thread was waiting to take the GIL back, which another thread held (the interpreter hands it
over every sys.getswitchinterval(), 5 ms). Such a sample also names the threads that were not
parked in a wait, since one of them held the GIL: work moved to an executor thread still
costs the loop whatever Python code it runs there.
"""

from __future__ import annotations

import asyncio.events
import selectors
import sysconfig
import threading
from pathlib import Path
from types import CodeType, FrameType

_LOOP_RUNS_CALLBACK = asyncio.events.Handle._run.__code__
_SELECT = selectors.EpollSelector.select.__code__ if hasattr(selectors, "EpollSelector") else None
_OURS = str(Path(__file__).resolve().parents[2]) + "/"  # the tree holding broker/, replica/, segment/, wire/
_STDLIB = sysconfig.get_paths()["stdlib"] + "/"
# Where an idle thread's innermost Python frame sits: a Condition or Event wait, a queue's get,
# a selector (the metrics server), an executor worker waiting for work.
_PARKED = {("threading.py", "wait"), ("queue.py", "get"), ("selectors.py", "select"),
           ("concurrent/futures/thread.py", "_worker")}


def short_path(path: str) -> str:
    """Installed packages' files from site-packages, ours from the tree's root, the standard
    library's from its directory."""
    if "/site-packages/" in path:
        return path.rsplit("/site-packages/", 1)[-1]
    for root in (_OURS, _STDLIB):
        if path.startswith(root):
            return path[len(root):]
    return path


def where(frame: FrameType) -> str:
    code = frame.f_code
    return f"{code.co_qualname} ({short_path(code.co_filename)}:{frame.f_lineno})"


def _ours(frame: FrameType) -> bool:
    path = frame.f_code.co_filename
    return path.startswith(_OURS) and "/site-packages/" not in path


def _shown(frame: FrameType | None) -> list[FrameType | None]:
    """The frames a sample names, outermost first, None where frames are left out: the callback
    the loop runs (in a thread not running a loop callback, none), the deepest frame of our own
    code under it, and the innermost frame (in a library, often)."""
    stack: list[FrameType] = []
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    stack.reverse()
    called = next((i + 1 for i, f in enumerate(stack) if f.f_code is _LOOP_RUNS_CALLBACK), None)
    chain: list[FrameType | None] = [*stack[called:]] if called is not None and called < len(stack) else [None, *stack]
    last = len(chain) - 1
    ours = next((i for i in range(last, 0, -1) if (f := chain[i]) is not None and _ours(f)), last)
    shown: list[FrameType | None] = []
    previous = -1
    for i in dict.fromkeys((0, ours, last)):
        if chain[i] is None:
            continue
        if i > previous + 1:
            shown.append(None)
        shown.append(chain[i])
        previous = i
    return shown


def describe(frame: FrameType | None) -> str:
    """A thread's stack from its innermost `frame`, as _shown names it."""
    shown = _shown(frame)
    if not shown:
        return "no Python frame"
    return " > ".join("..." if f is None else where(f) for f in shown)


def culprit(frame: FrameType | None) -> str:
    """What samples of one culprit share: the callback and our deepest function, without line
    numbers or the library function the sample happened to catch."""
    named = [f for f in _shown(frame) if f is not None]
    if named and len(named) > 1 and not _ours(named[-1]):
        named.pop()
    return " > ".join(f"{f.f_code.co_qualname} ({short_path(f.f_code.co_filename)})" for f in named)


def runs(frame: FrameType | None, code: CodeType) -> bool:
    """`code` is on the stack whose innermost frame is `frame`."""
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def in_select(frame: FrameType | None) -> bool:
    """The loop's thread is in the selector, not in a callback."""
    return frame is not None and frame.f_code is _SELECT


def parked(frame: FrameType) -> bool:
    return (short_path(frame.f_code.co_filename), frame.f_code.co_name) in _PARKED


def busy_threads(frames: dict[int, FrameType], skip: set[int]) -> list[str]:
    """The threads of `frames` (sys._current_frames()) not parked in a wait, but those in
    `skip`: "name: innermost frames"."""
    names = {t.ident: t.name for t in threading.enumerate()}
    return [f"{names.get(ident, ident)}: {describe(frame)}" for ident, frame in frames.items()
            if ident not in skip and not parked(frame)]
