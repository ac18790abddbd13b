"""How idle the event loop is: Kafka's handler and network-thread idle ratios, for one loop.

Kafka reads the request handlers' and network threads' idle time (RequestHandlerAvgIdlePercent,
NetworkProcessorAvgIdlePercent, fractions from 0 to 1 despite their names). Here one event-loop
thread does both jobs, so both gauges show the same figure: the share of wall time, since the
previous scrape, that the loop's thread neither ran on a CPU nor waited runnable for one. The
kernel counts both per thread (/proc/self/task/<tid>/schedstat, fields 1 and 2, nanoseconds), so
the measure costs the loop nothing: the scrape's thread reads it. A loop blocked on the GIL or
on disk I/O counts as idle (the kernel sees it sleep); so does one that only waits in epoll.
"""

from __future__ import annotations

import threading
import time

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


class LoopIdle(Collector):
    def __init__(self, native_id: int) -> None:
        """`native_id`: the event loop thread's (threading.get_native_id() on it)."""
        self._path = f"/proc/self/task/{native_id}/schedstat"
        self._lock = threading.Lock()  # scrapes run in threads of their own
        self._last = self._sample()

    def _sample(self) -> tuple[float, float] | None:
        """(wall seconds, seconds the thread ran or waited for a CPU); None without schedstat."""
        try:
            with open(self._path, "rb") as f:
                running, waiting = f.read().split()[:2]
        except (OSError, ValueError):
            return None
        return time.monotonic(), (int(running) + int(waiting)) / 1e9

    def idle_ratio(self) -> float | None:
        """The loop's idle share of the time since the previous call (the first: since start)."""
        with self._lock:
            now, last = self._sample(), self._last
            if now is None or last is None or now[0] <= last[0]:
                return None
            self._last = now
        busy = (now[1] - last[1]) / (now[0] - last[0])
        return min(1.0, max(0.0, 1.0 - busy))

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        ratio = self.idle_ratio()
        if ratio is None:
            return
        yield GaugeMetricFamily("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent",
                                "Share of the time since the last scrape the event loop (which handles "
                                "requests) was idle, 0 to 1", value=ratio)
        yield GaugeMetricFamily("kafka_network_socketserver_networkprocessoravgidlepercent",
                                "Share of the time since the last scrape the event loop (which reads and "
                                "writes the sockets) was idle, 0 to 1", value=ratio)
