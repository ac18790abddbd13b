"""Give the heap pages of a large unfinished frame back to the OS once its connection is gone.

A frame arrives as socket reads of up to 256 KiB, kept until its last byte is in
(wire/framing.py). glibc serves such reads from its main heap once it has freed one mmapped
chunk (it then raises its mmap threshold to that size), and it returns freed heap memory only
from the heap's top: chunks freed below anything still live stay resident, reused by later
allocations but counted in the broker's RSS. Ten peers that sent most of a 50 MiB frame each
and left kept 0-31 MiB of the 60 MiB they had cost (RSS 59-90 MiB over a 59 MiB baseline,
varying with what else the process allocated between their reads); malloc_trim(0) also
releases the free pages inside the heap, and then all of it came back.

Only a connection that dropped at least TRIM_AFTER_BYTES asks: a trim walks the whole heap.
Where the C library is not glibc there is no malloc_trim and nothing is done.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

TRIM_AFTER_BYTES = 1 << 20

_malloc_trim: Callable[[int], int] | None
try:
    _malloc_trim = ctypes.CDLL(None).malloc_trim
    _malloc_trim.argtypes = [ctypes.c_size_t]
except AttributeError:
    _malloc_trim = None


def dropped(unfinished_bytes: int) -> None:
    """A connection closed holding `unfinished_bytes` of frames it never finished."""
    if _malloc_trim is not None and unfinished_bytes >= TRIM_AFTER_BYTES:
        _malloc_trim(0)
