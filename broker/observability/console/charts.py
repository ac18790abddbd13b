"""The console's charts: the last hour of samples, kept in memory and bounded, drawn as SVG on
the server (no charting library in the page, nothing fetched from elsewhere).

Every console.sample.interval.ms a thread of the metrics port (ChartSampler) reads the
broker's bytes in and bytes out counters (the ones /metrics serves as
kafka_server_brokertopicmetrics_bytes{in,out}_total, which prometheus_client lets any thread
read) and each consumer group's total lag (copied on the event loop, as the console's other
reads are). History turns the counters into per-second rates between samples and keeps
HISTORY_S worth of samples in a deque; the lag of at most MAX_GROUPS_CHARTED groups (the most
behind ones) is kept per sample, so the memory is bounded whatever the number of groups.

line_chart draws them. Series names are user data (group ids): every text and attribute is
XML-escaped, and the page parses the answer as image/svg+xml (no script runs in it; the CSP
would stop one anyway). Colours are presentation attributes, not style attributes, which the
CSP's style-src refuses. Each series' legend says its latest value, and each series carries it
as data-latest, so what a chart shows can be read back as text.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable
from xml.sax.saxutils import escape, quoteattr

from prometheus_client import Counter

if TYPE_CHECKING:
    from broker.observability.metrics import BrokerMetrics

log = logging.getLogger(__name__)

HISTORY_S = 3600
MAX_GROUPS_CHARTED = 10
WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 180, 16, 28  # margins: the y labels, the legend, the x labels
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
Y_TICKS = 4


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


def counter_total(counter: Counter) -> float:
    """The sum of a prometheus_client Counter's series (every topic's)."""
    return sum(s.value for metric in counter.collect() for s in metric.samples if s.name.endswith("_total"))


class ChartSampler:
    """The thread that feeds a History: `read_lag()` returns {group: lag} (it reads on the loop)."""

    def __init__(self, history: History, metrics: BrokerMetrics, read_lag: Callable[[], dict[str, int]]) -> None:
        self._history = history
        self._metrics = metrics
        self._read_lag = read_lag
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="console-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Not joined: stop() runs on the event loop, which a sample in flight may be waiting for."""
        self._stop.set()

    def sample_now(self) -> None:
        try:
            lag = self._read_lag()
        except Exception as exc:  # a busy loop skips this sample's lag, not the throughput
            log.debug("console sampler: lag not read: %s", exc)
            lag = {}
        self._history.add(time.time(), counter_total(self._metrics.bytes_in), counter_total(self._metrics.bytes_out), lag)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample_now()
            self._stop.wait(self._history.interval_s)


@dataclass(frozen=True)
class Series:
    name: str
    points: list[tuple[float, float]]  # (wall-clock seconds, value)


def human(value: float, unit: str) -> str:
    """1234567 -> '1.2 M' (+ unit): axis and legend labels."""
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.1f} {prefix}{unit}"
    return f"{value:.0f} {unit}".rstrip() if value == int(value) else f"{value:.1f} {unit}".rstrip()


def line_chart(chart_id: str, title: str, unit: str, series: list[Series], span_s: float,
               now: float | None = None) -> str:
    """An SVG document: the last `span_s` seconds up to `now`, one polyline per series."""
    now = time.time() if now is None else now
    start = now - span_s
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    peak = max((v for s in series for _, v in s.points), default=0.0)
    top = _nice_ceiling(peak)

    def x(at: float) -> float:
        return LEFT + max(0.0, min(1.0, (at - start) / span_s)) * plot_w

    def y(value: float) -> float:
        return TOP + plot_h - (value / top) * plot_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id={quoteattr(chart_id)} class="chart" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
             f'aria-label={quoteattr(title)} font-family="sans-serif" font-size="11">',
             f"<title>{escape(title)}</title>",
             f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fff" stroke="#d0d7de"/>']
    for i in range(Y_TICKS + 1):
        value = top * i / Y_TICKS
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
                     'stroke="#eef1f4"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end" fill="#57606a">'
                     f"{escape(human(value, unit))}</text>")
    for minutes_ago in range(int(span_s // 60), -1, -15):
        at = now - minutes_ago * 60
        label = "now" if minutes_ago == 0 else f"-{minutes_ago} min"
        parts.append(f'<text x="{x(at):.1f}" y="{HEIGHT - 8}" text-anchor="middle" fill="#57606a">{label}</text>')
    if not any(s.points for s in series):
        parts.append(f'<text class="empty" x="{LEFT + plot_w / 2}" y="{TOP + plot_h / 2}" text-anchor="middle" '
                     'fill="#57606a">no samples yet</text>')
    for i, s in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        latest = s.points[-1][1] if s.points else 0.0
        shown = [(at, v) for at, v in s.points if at >= start]
        if shown:
            coords = " ".join(f"{x(at):.1f},{y(v):.1f}" for at, v in shown)
            parts.append(f'<polyline class="series" data-name={quoteattr(s.name)} data-latest="{latest:g}" '
                         f'points="{coords}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        legend_y = TOP + 12 + 16 * i
        parts.append(f'<rect x="{WIDTH - RIGHT + 10}" y="{legend_y - 8}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text class="legend" x="{WIDTH - RIGHT + 26}" y="{legend_y + 1}">'
                     f"{escape(_clip(s.name))}: {escape(human(latest, unit))}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _clip(name: str, most: int = 18) -> str:
    return name if len(name) <= most else name[:most - 1] + "…"


def _nice_ceiling(value: float) -> float:
    """The axis' top: 1, 2 or 5 times a power of ten, at least the value (1 for an empty chart)."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** len(str(int(value))) / 10 if value >= 1 else 1.0
    for step in (1, 2, 5, 10):
        if value <= step * magnitude:
            return step * magnitude
    return 10 * magnitude
