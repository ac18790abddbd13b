"""Where quotas meet requests: who the client is, what it used, and the throttle it gets.

A throttled client is held back two ways, as Kafka does since KIP-219: its answer carries
throttle_time_ms (a client that honours it waits by itself), and its connection is muted for
that long: the transport reads and serves nothing more of it until then (server.py), so a client
that ignores throttle_time_ms is held back as well. Muting holds only that connection's own task;
the event loop and every other connection go on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import time
from contextvars import ContextVar
from typing import Any, Coroutine, Generator, Protocol

from wire.error_codes import ErrorCode
from wire.protocol import EncodedBody, RequestHeader

from broker.net.request_context import RequestContext, current_request
from broker.quotas.manager import ClientQuotaManager

PRODUCE_KEY = 0
# Exempt from request_percentage, as Kafka sends these answers exempt from throttling: the
# SASL exchange, and what brokers ask each other (markers; a follower's fetch is checked below).
REQUEST_QUOTA_EXEMPT = frozenset({17, 27, 36, 83, 84, 85, 86, 87})


class BusyTime:
    """Awaits a handler's coroutine and counts the time its steps ran, not the time it waited
    (for data, a lock, a thread): Kafka's request quota counts a request thread's busy time.
    `request_time_recorded`: the handler already checked it against request_percentage (a
    consumer's Fetch, consumer_fetch below), so after_request does not count it again."""

    __slots__ = ("_coro", "busy_s", "_step_began", "request_time_recorded")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._coro = coro
        self.busy_s = 0.0  # the steps ended so far
        self._step_began: float | None = None  # perf_counter() when the running step began, None between steps
        self.request_time_recorded = False

    def so_far(self) -> float:
        """Busy seconds until now, the running step's included (the handler asking mid-step)."""
        running = time.perf_counter() - self._step_began if self._step_began is not None else 0.0
        return self.busy_s + running

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self._coro
        value: Any = None
        error: BaseException | None = None
        while True:
            self._step_began = time.perf_counter()
            try:
                waits_on = coro.throw(error) if error is not None else coro.send(value)
            except StopIteration as done:
                self._end_step()
                return done.value
            except BaseException:
                self._end_step()
                raise
            self._end_step()
            try:
                value, error = (yield waits_on), None
            except BaseException as exc:  # a cancel (or throw) goes on into the handler
                value, error = None, exc

    def _end_step(self) -> None:
        if self._step_began is not None:
            self.busy_s += time.perf_counter() - self._step_began
        self._step_began = None


# The request this task is handling (dispatch.py sets it around the handler), so a consumer's
# Fetch can check the handler time it used so far before it decides what to answer.
handling: ContextVar[BusyTime | None] = ContextVar("handling", default=None)


def client_of(context: RequestContext | None, header: RequestHeader) -> tuple[str, str]:
    """(user, client-id) as quotas name them: the principal's name (ANONYMOUS before a login), the
    header's client id ("" when null)."""
    principal = context.principal if context is not None else "User:ANONYMOUS"
    return principal.split(":", 1)[1], header.client_id or ""


def mute(context: RequestContext | None, throttle_ms: int) -> None:
    """The connection reads nothing more for `throttle_ms` (from now, or later if already muted)."""
    if context is None or throttle_ms <= 0:
        return
    until = asyncio.get_running_loop().time() + throttle_ms / 1000
    context.muted_until = max(context.muted_until, until)


def after_request(quotas: ClientQuotaManager, header: RequestHeader, follower: bool, frame_size: int,
                  handled: BusyTime, context: RequestContext | None) -> int:
    """Records a served request against its client's quotas (a produce's bytes; every client
    request's handler time); returns the throttle time (ms), the longest of them, and mutes the
    connection for it. `follower`: a follower's Fetch, which no quota counts.

    Every version is answered at once, its throttle_time_ms set, and then muted, as Kafka 4.3's
    broker does: its AbstractResponse.shouldClientThrottle(version) only tells a client whether
    to wait by itself, and an older client that does not is held back by the mute alone."""
    user, client = client_of(context, header)
    throttle = 0
    if header.api_key == PRODUCE_KEY:
        throttle = quotas.produce(user, client, frame_size)
    if header.api_key not in REQUEST_QUOTA_EXEMPT and not follower and not handled.request_time_recorded:
        throttle = max(throttle, quotas.request_time(user, client, handled.busy_s))
    mute(context, throttle)
    return throttle


def consumer_fetch_limit(quotas: ClientQuotaManager, header: RequestHeader) -> int | None:
    """The most a consumer's fetch may read, None when no consumer_byte_rate holds it. Kafka caps
    a consumer's fetch max bytes to this (getMaxValueInQuotaWindow): a larger fetch would be
    throttled, so answered empty, even if nothing else were recorded in the window, and the
    consumer would never progress."""
    user, client = client_of(current_request.get(), header)
    return quotas.fetch_window_bytes(user, client)


def consumer_fetch(quotas: ClientQuotaManager, header: RequestHeader, response_bytes: int) -> int:
    """A consumer's fetch of `response_bytes`, checked before it is answered as Kafka's
    handleFetchRequest does: its bytes against consumer_byte_rate and the handler time it used
    against request_percentage. Returns the throttle time (ms), the longer of the two, the
    connection muted for it. Throttled by either, the fetch is answered empty and its bytes are
    taken back out of the byte rate (the client fetches them again once it may)."""
    context = current_request.get()
    user, client = client_of(context, header)
    throttle = quotas.fetch(user, client, response_bytes)
    handled = handling.get()
    if handled is not None:
        handled.request_time_recorded = True
        throttle = max(throttle, quotas.request_time(user, client, handled.so_far()))
    if throttle:
        quotas.unrecord_fetch(user, client, response_bytes)
        mute(context, throttle)
    return throttle


def with_throttle(response: Any, throttle_ms: int) -> Any:
    """The response with its throttle_time_ms raised to `throttle_ms` (responses that have one)."""
    if response is None or throttle_ms <= 0:
        return response
    if isinstance(response, EncodedBody):  # a Metadata answer, already bytes (its handler says 0)
        return response.with_throttle(throttle_ms)
    if not hasattr(response, "throttle_time"):
        return response
    wanted = datetime.timedelta(milliseconds=throttle_ms)
    if response.throttle_time >= wanted:
        return response
    return dataclasses.replace(response, throttle_time=wanted)


THROTTLED_MUTATION = (ErrorCode.throttling_quota_exceeded, "The throttling quota has been exceeded.")


class MutationQuotas(Protocol):
    """The clients' controller_mutation_rate (KIP-599), as ClientQuotaManager (manager.py) keeps it."""

    def admit_mutations(self, user: str, client: str, partitions: int, strict: bool) -> bool:
        """Takes `partitions` tokens; False, taking none, when the client is over its rate and
        the request is `strict`."""

    def mutation_throttle_ms(self, user: str, client: str) -> int:
        """How long the client must wait for its tokens to climb back to zero."""


class MutationQuota:
    """One CreateTopics / DeleteTopics / CreatePartitions request's controller_mutation_rate:
    `admit(partitions)` per topic, in request order; `throttle()` once, for the answer (it mutes
    the connection too). `strict`: the request's version refuses a topic over the quota."""

    def __init__(self, quotas: MutationQuotas, header: RequestHeader, strict_since: int) -> None:
        self._quotas = quotas
        self._context = current_request.get()
        self._user, self._client = client_of(self._context, header)
        self._strict = header.api_version >= strict_since

    def admit(self, partitions: int) -> bool:
        return self._quotas.admit_mutations(self._user, self._client, partitions, self._strict)

    def throttle(self) -> datetime.timedelta:
        throttle_ms = self._quotas.mutation_throttle_ms(self._user, self._client)
        mute(self._context, throttle_ms)
        return datetime.timedelta(milliseconds=throttle_ms)
