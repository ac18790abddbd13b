"""The transactions benchmark's tables (transactions.py): produce per layout and partition count
against the idempotent producer of the same run and against the mock broker's ceiling, the
commit's steps as the broker saw them (txn_broker_steps.py), and read_committed against
read_uncommitted over a log with 10% of its transactions aborted."""

from __future__ import annotations


STEP_NAMES = ("prepare", "markers", "complete")


def _producer(txn: int) -> str:
    return "idempotent" if not txn else f"commit every {txn:,}"


def _rate(x: float) -> str:
    return f"{x:,.1f}"


def _ms(x) -> str:
    return "—" if x is None else f"{x:.1f}"


def step_ms(x) -> str:
    """A commit step's time: most are below a millisecond."""
    return "—" if x is None else f"{x:.2f}"


def markdown(r: dict) -> str:
    m = r["machine"]
    mock = {(c["partitions"], c["txn_records"]): c for c in r["mock"]}
    lines = [f"Transactions benchmark: {m['nproc']} cores ({m['cpu_model']}), Python {m['python']}, "
             f"librdkafka {m['librdkafka']}, commit {m['git_commit']}, load average at start "
             f"{', '.join(f'{x:.1f}' for x in r['load_average'])}; {r['settings']['record_size']} B records, "
             f"{r['settings']['seconds']:.0f} s per produce cell.", ""]
    lines.append("Load generator against librdkafka's mock broker (its own process, on the broker's CPU): "
                 + ", ".join(f"{p} partition{'s' if p > 1 else ''} {_producer(t)} {c['msgs_s']:,.0f} msg/s"
                             + (f" (commit p50 {_ms(c['commit']['p50_ms'])} ms)" if t else "")
                             for (p, t), c in mock.items()) + ".")
    for lay in r["layouts"]:
        c = lay["ceilings"]
        lines.append(f"{lay['layout']}: dd (fdatasync) {c['dd_mb_s']:,.0f} MB/s, write() into the page cache "
                     f"{c['page_cache_mb_s']:,.0f} MB/s.")
    lines += ["", "| layout | partitions | producer | msg/s | MB/s | × idempotent | × mock | txn/s | commit p50 / p99 ms "
              "| markers per txn | broker CPU | client CPU |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for lay in r["layouts"]:
        base = {c["partitions"]: c["msgs_s"] for c in lay["produce"] if not c["txn_records"]}
        for c in lay["produce"]:
            t = c["txn_records"]
            lines.append(
                f"| {lay['layout']} | {c['partitions']} | {_producer(t)} | {c['msgs_s']:,.0f} | {c['mb_s']:.1f} | "
                f"{c['msgs_s'] / base[c['partitions']]:.2f} | {c['msgs_s'] / mock[c['partitions'], t]['msgs_s']:.2f} | "
                f"{_rate(c['txns_s']) if t else '—'} | {_ms(c['commit']['p50_ms'])} / {_ms(c['commit']['p99_ms'])} | "
                f"{c['markers_per_txn']:.1f} | {c['broker_cpu']:.0%} | {c['client_cpu']:.0%} |")
    lines += ["", "Commit steps on the broker, median / mean ms (prepare: EndTxn in -> PrepareCommit written -> "
              "answered; markers: -> every marker written; complete: -> CompleteCommit written), and requests "
              "per transaction:", "",
              "| layout | partitions | producer | client commit p50 | prepare | markers | complete "
              "| Produce / AddPartitionsToTxn per txn | broker CPU µs per record |", "|---|---|---|---|---|---|---|---|---|"]
    for lay in r["layouts"]:
        for c in lay["produce"]:
            st = c.get("steps")
            if not st:
                continue
            per = st["requests_per_txn"]
            lines.append(f"| {lay['layout']} | {c['partitions']} | {_producer(c['txn_records'])} | "
                         f"{_ms(c['commit']['p50_ms'])} | "
                         + " | ".join(f"{step_ms(st[k]['p50_ms'])} / {step_ms(st[k]['mean_ms'])}" for k in STEP_NAMES)
                         + f" | {per['Produce']:.1f} / {per['AddPartitionsToTxn']:.1f} | "
                         f"{c['broker_cpu_us_per_record']:.1f} |")
    s = r["settings"]
    lines += ["", f"Consume: {s['fill_records']:,} records in transactions of {s['consume_txn']:,}, every 10th "
              f"aborted; best of {s['consume_rounds']} alternated passes after a warming pass.", "",
              "| layout | partitions | isolation | records/s | MB/s | offsets/s | × read_uncommitted (records/s) "
              "| broker CPU | client CPU |", "|---|---|---|---|---|---|---|---|---|"]
    for lay in r["layouts"]:
        for c in lay["consume"]:
            unc = c["best"]["read_uncommitted"]["msgs_s"]
            for iso, b in c["best"].items():
                lines.append(f"| {lay['layout']} | {c['partitions']} | {iso} | {b['msgs_s']:,.0f} | {b['mb_s']:.1f} | "
                             f"{b['offsets_s']:,.0f} | {b['msgs_s'] / unc:.2f} | {b['broker_cpu']:.0%} | "
                             f"{b['client_cpu']:.0%} |")
    return "\n".join(lines) + "\n"
