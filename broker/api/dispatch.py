"""One request frame in, one framed response (or nothing, or a coroutine that will make one) out."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Awaitable, Coroutine, Protocol

from segment.storage_errors import StorageError
from wire import unsupported
from wire.framing import PeerProtocolError
from wire.protocol import RequestHeader, UnsupportedVersion, decode_request, encode_response, fetch_replica_id

from broker.api.context import Answer, ApiContext, Request
from broker.api.deferred import Deferred
from broker.api.routes import HANDLERS
from broker.quotas.enforcement import BusyTime, after_request, handling as quota_handling, with_throttle

if TYPE_CHECKING:
    from broker.net.request_context import RequestContext
    from broker.observability.metrics import BrokerMetrics
    from broker.quotas.manager import ClientQuotaManager
    from broker.storage.modes import StorageModes

log = logging.getLogger(__name__)
FETCH_KEY = 1
Chunks = list[Any]  # the framed answer: byte buffers and file regions (wire.protocol.encode_response)


class Served(Protocol):
    """What dispatch needs of the broker: the handlers' context, and what runs around every
    handler (metrics, client quotas, the commit of what it appended)."""

    @property
    def api(self) -> ApiContext: ...

    @property
    def metrics(self) -> BrokerMetrics | None: ...

    @property
    def quotas(self) -> ClientQuotaManager: ...

    @property
    def storage(self) -> StorageModes: ...


class ConnectionClosed(Exception):
    """The request cannot be answered; the connection must close (already logged)."""


async def dispatch(served: Served, frame: bytes, context: RequestContext | None = None,
                   received: float | None = None) -> Chunks | Coroutine[Any, Any, tuple[Chunks | None, float]] | None:
    """Returns the response chunks, None when no response is due (acks=0), or, for a
    handler's Deferred answer, a coroutine making (one of those, time.perf_counter() when it
    was ready).

    The caller runs that coroutine as a task that is not the connection's: if the client goes
    away it still runs to the end, so what its request appended is still published after the
    fsync (broker/net/answer_backlog.py).

    Raises PeerProtocolError when the peer's request cannot be answered.
    `context` (request_context.py): the connection's; before it authenticated, its SASL
    session answers or refuses the frame (sasl_session.py), and only ApiVersions goes on.
    """
    session = None
    if context is not None:
        context.instruments = None  # set again below once the frame is a request counted
        session = context.session
    if session is not None and not session.authenticated:
        reply = session.gate(frame)
        if reply is not None:
            return reply
    try:
        header, request = decode_request(frame)
    except UnsupportedVersion as exc:
        answer = unsupported.answer(exc.header, frame)
        if answer is None and unsupported.closes_connection(exc.header):
            raise PeerProtocolError(
                f"unsupported version {exc.header.api_version} of api {exc.header.api_key} "
                f"from client {exc.header.client_id!r}"
            ) from None
        return [answer] if answer is not None else None
    started = time.perf_counter()
    metrics = served.metrics
    handling = BusyTime(HANDLERS[header.api_key](served.api, header, request))  # the request quota's measure
    handling_token = quota_handling.set(handling)  # a consumer's Fetch reads it (enforcement.py)
    try:
        response = await handling
    except Exception:
        if metrics is not None:
            metrics.request_failed(header, request, started, received)
        raise
    finally:
        quota_handling.reset(handling_token)
        try:
            served.storage.commit_writes()  # what it appended reaches the files before any answer
        except StorageError as exc:
            # The answer may say "appended" for units that are not in the files: it is never
            # sent. The store is offline (logged once by it); the client's retry gets
            # KAFKA_STORAGE_ERROR.
            raise ConnectionClosed(f"request {header.api_key} v{header.api_version}: {exc}") from None
    follower = header.api_key == FETCH_KEY and fetch_replica_id(request) >= 0
    throttle_ms = after_request(served.quotas, header, follower, len(frame), handling, context)  # quotas: mutes if over
    if isinstance(response, Deferred):
        if metrics is not None and context is not None:
            context.instruments = metrics.instruments(header, request)
        return _finish(served, header, request, response.awaitable, started, received, throttle_ms)
    response = with_throttle(response, throttle_ms)
    if metrics is not None:
        instruments = metrics.request_done(header, request, response, started, received)
        if context is not None:
            context.instruments = instruments
    if response is None:
        return None
    return encode_response(header, response)


async def _finish(served: Served, header: RequestHeader, request: Request, awaitable: Awaitable[Answer],
                  started: float, received: float | None, throttle_ms: int) -> tuple[Chunks | None, float]:
    response = with_throttle(await awaitable, throttle_ms)
    if served.metrics is not None:
        served.metrics.request_done(header, request, response, started, received)
    return None if response is None else encode_response(header, response), time.perf_counter()
