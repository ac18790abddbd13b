"""Where a transaction's commit goes, as the broker saw it, from its /metrics (`--metrics-port`)
scraped before and after a produce cell of the transactions benchmark (transactions.py):

- prepare: EndTxn in -> PrepareCommit written -> answered (kafka_network_requestmetrics_totaltimems
  of EndTxn: the client waits for this one);
- markers: PrepareCommit written -> every marker written (twinlog_transaction_end_step_ms);
- complete: markers written -> CompleteCommit written (the same histogram); a next transaction's
  AddPartitionsToTxn arriving before it is answered CONCURRENT_TRANSACTIONS;

each as a mean and a median read from the histogram's buckets (linear inside the bucket), and
per transaction the requests the client sent (Produce, AddPartitionsToTxn, EndTxn).
"""

from __future__ import annotations

import urllib.request

REQUESTS = ("Produce", "AddPartitionsToTxn", "EndTxn")
STEPS = {"prepare": ("kafka_network_requestmetrics_totaltimems", ("request", "EndTxn")),
         "markers": ("twinlog_transaction_end_step_ms", ("step", "markers")),
         "complete": ("twinlog_transaction_end_step_ms", ("step", "complete"))}


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """Every sample of the broker's /metrics: (name, sorted labels) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _delta(before: dict, after: dict, name: str, **labels) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def _histogram(before: dict, after: dict, name: str, label: tuple[str, str]) -> dict:
    """count, mean and median (ms) of what one histogram child observed between the scrapes."""
    key, value = label
    count = _delta(before, after, f"{name}_count", **{key: value})
    if not count:
        return {"count": 0, "mean_ms": None, "p50_ms": None}
    total = _delta(before, after, f"{name}_sum", **{key: value})
    bounds = sorted((dict(ls)["le"] for (n, ls) in after if n == f"{name}_bucket" and dict(ls).get(key) == value),
                    key=float)
    median, lower, below = None, 0.0, 0.0
    for le in bounds:
        upper = float(le)
        cumulative = _delta(before, after, f"{name}_bucket", **{key: value, "le": le})
        if cumulative >= count / 2:
            inside = cumulative - below
            median = upper if upper == float("inf") else lower + (upper - lower) * (count / 2 - below) / inside
            break
        lower, below = upper, cumulative
    return {"count": count, "mean_ms": total / count, "p50_ms": median}


def commit_steps(before: dict, after: dict, txns: int) -> dict:
    """The steps' figures and the requests per transaction between two scrapes."""
    out = {step: _histogram(before, after, name, label) for step, (name, label) in STEPS.items()}
    out["requests_per_txn"] = {
        r: sum(_delta(before, after, "kafka_network_requestmetrics_requests_total", request=r, version=v)
               for v in _versions(after, r)) / txns for r in REQUESTS} if txns else {}
    return out


def _versions(samples: dict, request: str) -> list[str]:
    return sorted({dict(ls)["version"] for (n, ls) in samples
                   if n == "kafka_network_requestmetrics_requests_total" and dict(ls).get("request") == request})
