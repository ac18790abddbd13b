"""The metrics port (`--metrics-port`): GET /metrics for Prometheus, GET /health for probes.

    /metrics   Prometheus text (or OpenMetrics, by Accept), prometheus_client's own WSGI app
    /health    200 "ok" once the broker serves: its logs opened and recovered, the Kafka
               listener open and, in a cluster, the first metadata image applied; 503
               "starting" before that and "stopping" once SIGTERM arrived
    /          the console (console/http_app.py): its page, /static/... and /api/...;
               /console redirects to /

The port opens before the logs do (lifecycle.py), so a probe sees 503 during a long recovery
instead of a refused connection. The server runs in its own threads (wsgiref with one thread
per request, as prometheus_client's start_http_server): the event loop never blocks on a
scrape, and what a scrape reads from the broker it reads on the loop (metrics_collector.py).
A port already in use fails start-up with one line, as the Kafka port does.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from socketserver import ThreadingMixIn
from typing import Any, Iterable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from prometheus_client import make_wsgi_app
from prometheus_client.process_collector import ProcessCollector

from broker.observability.console import broker_state
from broker.observability.console.broker_state import ConsoleSources
from broker.observability.console.charts import ChartSampler, History
from broker.observability.console.http_app import ConsoleApp
from broker.observability.loop_idle import LoopIdle
from broker.observability.metrics import BrokerMetrics
from broker.observability.loop_read import read_on_loop
from broker.observability.metrics_collector import SNAPSHOT_TIMEOUT_S, BrokerStateCollector, take_snapshot

log = logging.getLogger(__name__)

STARTING, READY, STOPPING = "starting", "ok", "stopping"


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a scrape in flight never holds up the broker's exit
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        pass  # one access line per scrape is noise in the broker's log


def _server_class(host: str) -> type[_Server]:
    family = socket.getaddrinfo(host or None, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    return type("MetricsServer", (_Server,), {"address_family": family})


class MetricsEndpoint:
    """What lifecycle.py calls: start (before the logs open), attach, ready, close."""

    def __init__(self, host: str, port: int | None, console_sample_interval_ms: int) -> None:
        """`port` None: metrics are off; every call below is then a no-op. Raises OSError when
        the port cannot be bound."""
        self.started = time.monotonic()
        self.state = STARTING
        self.metrics: BrokerMetrics | None = None
        self._thread: threading.Thread | None = None
        self._server: _Server | None = None
        self._console: ConsoleApp | None = None
        self._sampler: ChartSampler | None = None
        if port is None:
            return
        self.metrics = BrokerMetrics()
        self._console = ConsoleApp(History(console_sample_interval_ms / 1000))
        ProcessCollector(registry=self.metrics.registry)  # CPU, memory, open fds of the broker
        self._server = make_server(host, port, self._app(make_wsgi_app(self.metrics.registry), self._console),
                                   server_class=_server_class(host), handler_class=_QuietHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="metrics-http", daemon=True)
        self._thread.start()
        log.info("metrics on http://%s:%d/metrics, readiness on /health, console on /", host, self.port)

    @property
    def port(self) -> int | None:
        return self._server.server_port if self._server is not None else None

    def _app(self, metrics_app: WSGIApplication, console: ConsoleApp) -> WSGIApplication:
        def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
            path = environ.get("PATH_INFO", "/")
            if path == "/health":
                status = "200 OK" if self.state == READY else "503 Service Unavailable"
                start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
                return [f"{self.state}\n".encode()]
            if path == "/metrics":
                return metrics_app(environ, start_response)
            if console.handles(path):
                return console(environ, start_response)
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"not found: try /metrics, /health or / (the console)\n"]
        return app

    def attach(self, sources: ConsoleSources, loop: asyncio.AbstractEventLoop) -> None:
        """The broker's logs are open and recovered: read its state at scrape time and for the
        console (on `loop`, the broker's event loop). The broker counts its requests into
        `metrics`, given to it when it was made (lifecycle.py)."""
        if self.metrics is None or self._console is None:
            return
        metrics = self.metrics
        self.metrics.recovery_seconds.set(time.monotonic() - self.started)
        self.metrics.registry.register(BrokerStateCollector(lambda: take_snapshot(sources.state, metrics), loop))
        self.metrics.registry.register(LoopIdle(threading.get_native_id()))  # called on the loop's thread
        self._console.attach(sources, loop)
        self._sampler = ChartSampler(self._console.history, self.metrics, lambda: read_on_loop(
            loop, lambda: broker_state.group_lag_totals(sources.state), SNAPSHOT_TIMEOUT_S))
        self._sampler.start()

    def ready(self) -> None:
        """The broker serves: /health answers 200."""
        if self.metrics is not None:
            self.metrics.startup_seconds.set(time.monotonic() - self.started)
        self.state = READY

    def stopping(self) -> None:
        """SIGTERM arrived: /health answers 503 while the broker hands over and closes."""
        self.state = STOPPING

    def close(self) -> None:
        if self._server is None:
            return
        if self._sampler is not None:
            self._sampler.stop()
        self._server.shutdown()  # returns within serve_forever's 0.1 s poll
        self._server.server_close()
