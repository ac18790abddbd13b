"""Kafka's quota rate: a SampledStat of `samples` windows of `window_s` seconds, measured as Rate.

Samples are a ring. A record goes into the current sample unless that sample is `window_s` old,
then into the next one, which starts at the record's time (samples are not aligned to a clock).
A sample `samples * window_s` old no longer counts. The rate is the samples' total over the time
since the oldest one started, but never over less than `samples - 1` whole windows: a client's
first second is not measured as if it were the whole window, so it may send up to
`(samples - 1) * window_s * quota` before it is throttled, as a Kafka client may.

Throttle time (Kafka's QuotaUtils.throttleTime): how long the client must stay quiet for the rate
to fall back to the quota, `(rate - quota) / quota * window`.
"""

from __future__ import annotations


class SampledRate:
    __slots__ = ("_samples", "_window", "_starts", "_values", "_current")

    def __init__(self, samples: int, window_s: float) -> None:
        self._samples = samples
        self._window = window_s
        self._starts: list[float] = []
        self._values: list[float] = []
        self._current = 0

    def record(self, value: float, now: float) -> None:
        if not self._starts:
            self._starts.append(now)
            self._values.append(0.0)
        elif now - self._starts[self._current] >= self._window:
            self._current = (self._current + 1) % self._samples
            if self._current >= len(self._starts):
                self._starts.append(now)
                self._values.append(0.0)
            else:
                self._starts[self._current] = now
                self._values[self._current] = 0.0
        self._values[self._current] += value

    def _purge(self, now: float) -> None:
        expire = self._samples * self._window
        for i, start in enumerate(self._starts):
            if now - start >= expire:
                self._starts[i] = now
                self._values[i] = 0.0

    def window_size(self, now: float) -> float:
        """Seconds the rate is taken over (Rate.windowSize); call after _purge."""
        if not self._starts:
            return (self._samples - 1) * self._window
        elapsed = now - min(self._starts)
        full = int(elapsed // self._window)
        if full < self._samples - 1:
            elapsed += (self._samples - 1 - full) * self._window
        return elapsed if elapsed > 0 else 0.001

    def measure(self, now: float) -> tuple[float, float]:
        """(the rate per second, the window it was taken over)."""
        self._purge(now)
        window = self.window_size(now)
        return sum(self._values) / window, window

    def throttle_ms(self, quota: float, now: float) -> int:
        """Kafka's throttle time for this rate against `quota` (0 while within it)."""
        rate, window = self.measure(now)
        if rate <= quota:
            return 0
        return round((rate - quota) / quota * window * 1000)

    def idle_since(self, now: float) -> float:
        """Seconds since the newest sample started (for dropping rates nobody records into)."""
        return now - max(self._starts) if self._starts else float("inf")


class TokenBucket:
    """Kafka's TokenBucket (KIP-599), for controller mutations: `quota` tokens a second, at most
    `burst` banked (quota * samples * window, a full bucket to start). A mutation takes its
    partitions' tokens even past zero; while the bucket is below zero the client is over its
    quota, for as long as the bucket needs to climb back to zero."""

    __slots__ = ("_tokens", "_last")

    def __init__(self, burst: float, now: float) -> None:
        self._tokens = burst
        self._last = now

    def _refill(self, quota: float, burst: float, now: float) -> None:
        self._tokens = min(burst, self._tokens + quota * (now - self._last))
        self._last = now

    def exceeded(self, quota: float, burst: float, now: float) -> bool:
        self._refill(quota, burst, now)
        return self._tokens < 0

    def take(self, tokens: float, quota: float, burst: float, now: float) -> None:
        self._refill(quota, burst, now)
        self._tokens -= tokens

    def throttle_ms(self, quota: float, burst: float, now: float) -> int:
        self._refill(quota, burst, now)
        return round(-self._tokens / quota * 1000) if self._tokens < 0 else 0
