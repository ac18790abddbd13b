"""A broker process from start to clean stop: what `twinlog serve` runs.

The order is what makes it safe to operate:
1. SIGTERM/SIGINT handlers first, so a signal at any later moment (even right after the port
   opens) ends in the clean shutdown below, never in the default action's abrupt exit.
2. The data-dir lock (data_dir_lock.py): a second broker on the same data dir stops here.
3. The port is bound (not yet listening: connections are refused, as before it existed). A
   port in use stops here, before anything but the lock is written; `--port 0` gets its
   real port now, and that port is what Metadata advertises and a cluster registers.
4. The logs open and recover (Broker), then the socket listens.

An operator's mistake (port in use, data dir locked or unusable, a disk that fails at start)
ends the process with one log line and exit code 1, not a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket

from replica.cancellation import cancel_and_wait
from segment.log import StorageError

from broker.broker import Broker
from broker.heap_freezer import built_frozen, freeze_heap
from broker.settings.config import BrokerConfig
from broker.storage.data_dir_lock import DataDirLock, DataDirUnusable
from broker.observability.loop_lag import LoopLagMonitor
from broker.observability.metrics_http import MetricsEndpoint
from broker.net.listener_sockets import BoundListeners, ListenerBindError

log = logging.getLogger("twinlog")


def _fail(message: str, *args) -> SystemExit:
    log.error(message, *args)
    return SystemExit(1)


def bind_listener(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port), not yet listening; raises OSError."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart reuses a TIME_WAIT port
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock


async def run(config: BrokerConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    lock = DataDirLock(config.data_dir)
    try:
        lock.acquire()
    except DataDirUnusable as exc:
        raise _fail("%s", exc) from None
    try:
        await _serve_until_stopped(config, stop)
    finally:
        lock.release()


async def _serve_until_stopped(config: BrokerConfig, stop: asyncio.Event) -> None:
    try:
        sock = BoundListeners.bind(config, bind_listener)  # every listener (listener_sockets.py)
    except ListenerBindError as exc:
        raise _fail("%s", exc) from None
    config = sock.config  # with the ports bound
    try:
        metrics = MetricsEndpoint(config.host, config.metrics_port, config.console_sample_interval_ms)  # /health: 503 while the logs recover
    except OSError as exc:
        sock.close()
        raise _fail("cannot serve metrics on %s:%d: %s", config.host, config.metrics_port, exc.strerror or exc) from None
    try:
        with built_frozen():  # every partition opened: long-lived objects, frozen as made
            broker = Broker(config, metrics.metrics)
    except (StorageError, OSError) as exc:
        sock.close()
        # A full or failing disk at start-up: one line saying so, not a traceback.
        raise _fail("cannot open the data in %s: %s", config.data_dir, exc) from None
    metrics.attach(broker.observed, asyncio.get_running_loop())
    try:
        server = await sock.serve(broker)
    except OSError as exc:  # another process bound the port too (SO_REUSEADDR) and listened first
        broker.storage.close()
        raise _fail("cannot listen on %s:%d: %s", config.host, config.port, exc.strerror or exc) from None
    await broker.join_cluster()  # a cluster member registers once it can answer its peers' fetches
    broker.start_background()
    # What start-up made (modules, the codec's classes, open topics) leaves the cyclic collector's
    # reach: without it the first full collections walked that heap while the loop waited (15-25
    # ms stalls, the produce p99.9 of the latency benchmark). heap_freezer.py does it again later.
    # The partitions were frozen as opened: only what came after them is collected first.
    freeze_heap(full=False)
    lag = LoopLagMonitor(asyncio.get_running_loop(), config.event_loop_stall_threshold_ms / 1000,
                         metrics.metrics.event_loop_lag.observe if metrics.metrics is not None else None)
    lag.start()  # serving from here on: start-up's own long steps (recovery) are not stalls of it
    log.info("twinlog listening on %s:%d, data in %s (%s storage)",
             config.host, config.port, config.data_dir, config.storage_mode)
    metrics.ready()
    await stop.wait()
    log.info("shutting down")
    lag.stop()
    metrics.stopping()
    await broker.controlled_shutdown()
    server.close()
    await broker.close()
    metrics.close()
    # What is left (connections' tasks, a produce parked on replication, an ISR proposal to
    # etcd) is cancelled here and for sure: asyncio.run would wait forever on a task whose
    # cancel 3.11 lost (replica/cancellation.py).
    leftovers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    try:
        await cancel_and_wait(leftovers)
    except Exception:
        log.debug("a task failed while stopping", exc_info=True)
