"""What a handler may return besides a response: a Deferred one.

A handler returns a response object, None (no response is due, acks=0), or a
Deferred: the request's effects on the logs are done, in request order, and the
answer will be ready once `awaitable` finishes (a durable produce waiting for
its fsync). The connection keeps serving the requests pipelined behind it and
still writes the answers in request order (server.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable


@dataclass(frozen=True)
class Deferred:
    awaitable: Awaitable[Any]  # resolves to the response object, or None when none is due
