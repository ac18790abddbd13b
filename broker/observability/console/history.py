"""The console's charts' data: the last hour of samples, kept in memory and bounded.

Every console.sample.interval.ms a thread of the metrics port (ChartSampler) reads the
broker's bytes in and bytes out counters (the ones /metrics serves as
kafka_server_brokertopicmetrics_bytes{in,out}_total, which prometheus_client lets any thread
read) and each consumer group's total lag (copied on the event loop, as the console's other
reads are). History turns the counters into per-second rates between samples and keeps
HISTORY_S worth of samples in a deque; the lag of at most MAX_GROUPS_CHARTED groups (the most
behind ones) is kept per sample, so the memory is bounded whatever the number of groups.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass

log = logging.getLogger(__name__)

HISTORY_S = 3600
MAX_GROUPS_CHARTED = 10


@dataclass(frozen=True)
class Sample:
    at: float  # wall-clock seconds
    bytes_in_per_s: float
    bytes_out_per_s: float
    lag: dict[str, int]  # group -> records behind, over the partitions hosted here


class History:
    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._samples: deque[Sample] = deque(maxlen=max(2, int(HISTORY_S / interval_s)))
        self._last: tuple[float, float, float] | None = None  # (at, bytes in, bytes out) counters
        self._lock = threading.Lock()  # the sampler appends while an HTTP thread copies

    def add(self, at: float, bytes_in: float, bytes_out: float, lag: dict[str, int]) -> None:
        """One sample of the counters' totals and the groups' lag: the first only sets where the
        rates start from."""
        kept = dict(sorted(lag.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_GROUPS_CHARTED])
        with self._lock:
            last, self._last = self._last, (at, bytes_in, bytes_out)
            if last is None or at <= last[0]:
                return
            elapsed = at - last[0]
            # a counter that went down was reset (a topic deleted and its series dropped): no rate
            rate_in = max(0.0, bytes_in - last[1]) / elapsed
            rate_out = max(0.0, bytes_out - last[2]) / elapsed
            self._samples.append(Sample(at, rate_in, rate_out, kept))

    def samples(self, since: float | None = None) -> list[Sample]:
        with self._lock:
            return [s for s in self._samples if since is None or s.at >= since]


def counter_total(counter) -> float:
    """The sum of a prometheus_client Counter's series (every topic's)."""
    return sum(s.value for metric in counter.collect() for s in metric.samples if s.name.endswith("_total"))


class ChartSampler:
    """The thread that feeds a History: `read_lag()` returns {group: lag} (it reads on the loop)."""

    def __init__(self, history: History, metrics, read_lag) -> None:
        self._history = history
        self._metrics = metrics
        self._read_lag = read_lag
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="console-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def sample_now(self) -> None:
        try:
            lag = self._read_lag()
        except Exception as exc:  # a busy loop skips this sample's lag, not the throughput
            log.debug("console sampler: lag not read: %s", exc)
            lag = {}
        self._history.add(time.time(), counter_total(self._metrics.bytes_in), counter_total(self._metrics.bytes_out), lag)

    def _run(self) -> None:
        while True:
            self.sample_now()
            if self._stop.wait(self._history.interval_s):
                return
