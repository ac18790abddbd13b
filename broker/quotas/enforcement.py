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

from broker.net.request_context import current_request

PRODUCE_KEY = 0


def client_of(context, header) -> tuple[str, str]:
    """(user, client-id) as quotas name them: the principal's name (ANONYMOUS before a login), the
    header's client id ("" when null)."""
    principal = context.principal if context is not None else "User:ANONYMOUS"
    return principal.split(":", 1)[1], header.client_id or ""


def mute(context, throttle_ms: int) -> None:
    """The connection reads nothing more for `throttle_ms` (from now, or later if already muted)."""
    if context is None or throttle_ms <= 0:
        return
    until = asyncio.get_running_loop().time() + throttle_ms / 1000
    context.muted_until = max(context.muted_until, until)


def after_request(broker, header, frame_size: int, context) -> int:
    """Records a served request against its client's quotas; returns the throttle time (ms) and
    mutes the connection for it."""
    if header.api_key != PRODUCE_KEY:
        return 0
    user, client = client_of(context, header)
    throttle = broker.quotas.produce(user, client, frame_size)
    mute(context, throttle)
    return throttle


def consumer_fetch(broker, header, response_bytes: int) -> int:
    """A consumer's fetch of `response_bytes`: the throttle time (ms), the connection muted for
    it. Throttled, the fetch is answered empty and its bytes are taken back out of the rate, as
    Kafka's handleFetchRequest does (the client fetches them again once it may)."""
    context = current_request.get()
    user, client = client_of(context, header)
    throttle = broker.quotas.fetch(user, client, response_bytes)
    if throttle:
        broker.quotas.unrecord_fetch(user, client, response_bytes)
        mute(context, throttle)
    return throttle


def with_throttle(response, throttle_ms: int):
    """The response with its throttle_time_ms raised to `throttle_ms` (responses that have one)."""
    if response is None or throttle_ms <= 0 or not hasattr(response, "throttle_time"):
        return response
    wanted = datetime.timedelta(milliseconds=throttle_ms)
    if response.throttle_time >= wanted:
        return response
    return dataclasses.replace(response, throttle_time=wanted)
