"""A broker's /metrics read and summed by name and labels."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """Every sample of /metrics: (name, sorted labels) -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name: str, **labels) -> float:
    return samples[(name, tuple(sorted((k, str(v)) for k, v in labels.items())))]


def total(samples, name: str, **labels) -> float:
    """Sum over the samples of `name` whose labels include `labels` (e.g. over versions)."""
    want = {k: str(v) for k, v in labels.items()}
    return sum(v for (n, ls), v in samples.items() if n == name and want.items() <= dict(ls).items())
