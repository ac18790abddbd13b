"""The fault suite's transaction rules, after Jepsen's Kafka checker: what the transactional
writer's history (fault_txn_workload.py) and the read_committed reads must satisfy against the
final log (fault_checker.py's parsed entries, transaction markers included).

What a read_committed read of the final log returns is derived from the log's own bytes: a
non-transactional record, and a transactional one whose producer's next marker after it is a
COMMIT, below the last stable offset (the first offset of a transaction no marker has ended).
Against that view:

  - committed lost:   a record of a transaction whose commit returned is not visible, or is
                      visible at more than one offset;
  - aborted visible:  a record of a transaction whose abort returned is visible in the final
                      log, or was returned by a read_committed read during the faults or after;
  - not atomic:       a transaction with some of its records visible and some not (across
                      partitions); an unknown transaction may be all visible or none;
  - beyond LSO:       a read_committed read, during the faults, of a record the view does not
                      hold at that offset (served past the last stable offset, or from a log
                      later cut);
  - final read:       a fresh read_committed consumer's read of the final log differs from the
                      view (the broker's last stable offset or aborted-transaction index
                      disagrees with the markers);
  - open:             a transaction no marker ended in the final log, after its writer stopped
                      (a hanging transaction holds the last stable offset back for good).

`txn_violations()` lists each as a line (test_fault_checker.py shows each kind caught).
"""

from __future__ import annotations

from collections import defaultdict

from compat_tests.helpers.fault_checker import Entry
from compat_tests.helpers.fault_txn_workload import Txn

COMMIT = 1
SHOWN = 5  # examples per violation kind


def committed_view(log: list[Entry]) -> tuple[dict[int, bytes], list[int]]:
    """({offset: value} of what a read_committed read of `log` returns, the first offset of each
    transaction no marker ended)."""
    visible: dict[int, bytes] = {}
    pending: dict[int, list[Entry]] = {}
    for e in log:
        if e.marker is not None:
            ended = pending.pop(e.producer_id, [])
            if e.marker == COMMIT:
                visible.update((x.offset, x.value) for x in ended)
        elif e.transactional:
            pending.setdefault(e.producer_id, []).append(e)
        else:
            visible[e.offset] = e.value
    open_starts = sorted(entries[0].offset for entries in pending.values())
    if open_starts:
        visible = {o: v for o, v in visible.items() if o < open_starts[0]}
    return visible, open_starts


def _examples(kind: str, found: list) -> list[str]:
    return [f"{kind}: {len(found)}, e.g. {found[:SHOWN]}"] if found else []


def txn_violations(txns: list[Txn], reads: list[tuple[int, int, bytes]], final_reads: list[tuple[int, int, bytes]],
                   logs: dict[int, list[Entry]]) -> list[str]:
    """`txns`: the transactional writers' histories; `reads`: (partition, offset, value) the
    read_committed reader was served during the run; `final_reads`: a read_committed read of
    the final log after the heal."""
    out: list[str] = []
    views, where = {}, defaultdict(list)
    for p, log in logs.items():
        views[p], open_starts = committed_view(log)
        out += _examples(f"partition {p} transaction open in the final log, from offset", open_starts)
        for offset, value in views[p].items():
            where[value].append((p, offset))

    aborted = {v for t in txns if t.outcome == "aborted" for _, v in t.values}
    committed = [t for t in txns if t.outcome == "committed"]
    out += _examples("committed transaction's record not visible",
                     [(t.key, p, v) for t in committed for p, v in t.values if not where[v]])
    out += _examples("committed transaction's record visible at more than one offset",
                     [(t.key, v, where[v]) for t in committed for _, v in t.values if len(where[v]) > 1])
    out += _examples("aborted transaction's record visible in the final log",
                     [(v, where[v]) for v in sorted(aborted) if where[v]])
    out += _examples("aborted transaction's record served to read_committed",
                     [r for r in [*reads, *final_reads] if r[2] in aborted])
    partial = [(t.key, t.outcome, sum(bool(where[v]) for _, v in t.values), len(t.values)) for t in txns]
    out += _examples("transaction partly visible (key, outcome, visible, records)",
                     [x for x in partial if 0 < x[2] < x[3]])
    out += _examples("read_committed read beyond the last stable offset (not in the final view there)",
                     [(p, o, v, views[p].get(o)) for p, o, v in reads if views[p].get(o) != v])
    served = {(p, o): v for p, o, v in final_reads}
    expected = {(p, o): v for p, view in views.items() for o, v in view.items()}
    out += _examples("final read_committed read unlike the log's markers (partition, offset, served, expected)",
                     [(p, o, served.get((p, o)), expected.get((p, o)))
                      for p, o in sorted(served.keys() | expected.keys()) if served.get((p, o)) != expected.get((p, o))])
    return out
