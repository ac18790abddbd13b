"""Targets, ratios, and the two outputs of a run: bench/results/latest-<broker>.json (everything
measured) and bench/results/latest-<broker>.md (the table a person reads, with the machine it ran on).

Each figure is set against a target (what twinlog must reach on this 2-core machine) and a limit
(what the machine itself allows, measured in the same run):

| figure                     | target                  | limit                                   |
|----------------------------|-------------------------|-----------------------------------------|
| produce MB/s, ~1 MiB batch | >= 0.5 x disk rate      | plain write() into the page cache, same |
|                            |                         | volume, measured just before each run   |
| produce msg/s, 100 B       | >= 500,000 msg/s        | disk rate / bytes per record in batches |
| fetch MB/s, hot cache      | >= 2,000 MB/s           | loopback sendfile to a counting reader  |

MB are 10^6 bytes and count record values only (no keys, headers or batch framing).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

TARGET_PRODUCE_DISK_FRACTION = 0.5
TARGET_PRODUCE_MSGS = 500_000
TARGET_FETCH_MB_S = 2_000


def _ratio(a, b):
    return None if a is None or not b else a / b


def figures(r: dict) -> list[dict]:
    """One row per headline figure: value, target, limit and both ratios (None when unknown)."""
    disk = r.get("disk", {}).get("mb_s")
    big, small, fetch = r.get("produce_large", {}), r.get("produce_small", {}), r.get("fetch", {})
    per_record = small.get("avg_batch_bytes_per_record")
    msgs_limit = disk * 1e6 / per_record if disk and per_record else None
    rows = [
        {"key": "disk_write_mb_s", "name": "disk sequential write (dd bs=1M conv=fdatasync)",
         "value": disk, "unit": "MB/s", "target": None, "limit": None, "limit_is": "the machine"},
        {"key": "produce_large_mb_s", "name": f"produce, {r.get('value_size', 0) // 1024} KiB values "
                                              f"in ~1 MiB batches, acks=1",
         "value": big.get("mb_s"), "unit": "MB/s",
         "target": disk * TARGET_PRODUCE_DISK_FRACTION if disk else None,
         "limit": big.get("page_cache_write_mb_s"), "limit_is": "plain write() into the page cache just before each run; noisy here"},
        {"key": "produce_small_msgs", "name": "produce, 100-byte values, client batching, acks=1",
         "value": small.get("msgs_s"), "unit": "msg/s", "target": TARGET_PRODUCE_MSGS,
         "limit": msgs_limit, "limit_is": f"disk rate / {per_record or 0:.0f} B per record"},
        {"key": "fetch_mb_s", "name": "fetch, hot page cache (assign, no commits)",
         "value": fetch.get("mb_s"), "unit": "MB/s", "target": TARGET_FETCH_MB_S,
         "limit": r.get("loopback", {}).get("mb_s"), "limit_is": "loopback sendfile ceiling"},
    ]
    for row in rows:
        row["ratio_to_target"] = _ratio(row["value"], row["target"])
        row["ratio_to_limit"] = _ratio(row["value"], row["limit"])
    for row, phase in zip(rows[1:], (big, small, fetch)):
        row["status"] = phase.get("status", "not run")
        if phase.get("runs") and row["status"] == "ok":
            row["status"] = f"ok, median of {len(phase['runs'])}"
    rows[0]["status"] = "ok" if disk else r.get("disk", {}).get("status", "not run")
    return rows


def _num(v, unit: str = "") -> str:
    if v is None:
        return "—"
    return f"{v:,.0f} {unit}".strip()


def _x(v) -> str:
    return "—" if v is None else f"{v:.2f}×"


def _pct(cpu_s, seconds) -> str:
    return "—" if cpu_s is None or not seconds else f"{100 * cpu_s / seconds:.0f}%"


def markdown(r: dict) -> str:
    m = r["machine"]
    b = r["broker"]
    lines = [
        f"# twinlog benchmark — broker {b['kind']} ({b['storage']})",
        "",
        f"Run {r['started_at']} ({r['profile']} profile, {r['elapsed_s']:.0f} s), git {m['git_commit']}.",
        f"Machine: {m['nproc']} cores ({m['cpu_model']}), {m['memory_gib']} GiB, kernel {m['kernel']}, "
        f"Python {m['python']}, confluent-kafka {m['confluent_kafka']} / librdkafka {m['librdkafka']}.",
        f"Disk: {_num(r.get('disk', {}).get('mb_s'), 'MB/s')} sequential write on {r['filesystem']} "
        f"(median of {', '.join(_num(d['mb_s']) for d in r.get('disk', {}).get('samples', []))} MB/s).",
        f"Clients: {r.get('client_settings', '')}.",
        *_caveats(r),
        f"Broker: `{' '.join(b['command_display'])}`. {r['pinning']}",
        "",
        "| figure | result | target | × target | limit | × limit | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in figures(r):
        limit = f"{_num(row['limit'], row['unit'])} ({row['limit_is']})" if row["limit"] else row["limit_is"]
        lines.append(f"| {row['name']} | {_num(row['value'], row['unit'])} | {_num(row['target'], row['unit'])} "
                     f"| {_x(row['ratio_to_target'])} | {limit} | {_x(row['ratio_to_limit'])} | {row['status']} |")
    lines += ["", "Where the time went (CPU as a share of one core over each timed window; "
              "the client is all load-generator processes, librdkafka threads included):", "",
              "| phase | runs (each) | data | broker CPU | client CPU | batches seen by librdkafka |",
              "|---|---|---|---|---|---|"]
    for key, label in (("produce_large", "produce ~1 MiB batches"), ("produce_small", "produce 100 B"),
                       ("fetch", "fetch")):
        p = r.get(key)
        if not p or not p.get("runs"):
            continue
        unit = "msg/s" if key == "produce_small" else "MB/s"
        each = ", ".join(_num(x["rate"]) for x in p.get("all_passes", p["runs"])) + f" {unit}"
        if p.get("all_passes"):
            each += " (first pass warms, not counted)"
        data = f"{p['records']:,} records, {p['bytes'] / 1e6:,.0f} MB"
        batches = (f"{p['avg_batch_bytes'] / 1024:,.0f} KiB, {p['avg_batch_records']:,.0f} records"
                   if p.get("avg_batch_bytes") else "—")
        lines.append(f"| {label} | {each} | {data} | {_pct(p['broker_cpu_s'], p['seconds'])} "
                     f"| {_pct(p['client_cpu_s'], p['seconds'])} | {batches} |")
    if r.get("loopback"):
        lo = r["loopback"]
        lines += ["", f"Loopback ceiling: os.sendfile of a hot file to a reader that only counts bytes, "
                      f"{lo['bytes'] / 1e6:,.0f} MB at {lo['mb_s']:,.0f} MB/s."]
    if r.get("errors"):
        lines += ["", "## Failures", ""] + [f"- {e}" for e in r["errors"]]
    if r.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {n}" for n in r["notes"]]
    return "\n".join(lines) + "\n"


def _caveats(r: dict) -> list[str]:
    out = []
    samples = [d["mb_s"] for d in r.get("disk", {}).get("samples", [])]
    if len(samples) > 1 and max(samples) > 1.5 * min(samples):
        out.append(f"The disk's rate varied {min(samples):,.0f}–{max(samples):,.0f} MB/s between dd runs "
                   f"(a virtual disk behind a host cache absorbs bursts): ratios to it move as much.")
    wb = r.get("machine", {}).get("dirty_writeback", {})
    runs = r.get("produce_large", {}).get("runs", [])
    if wb.get("background_mib") and runs:
        out.append(f"Each produce run starts after sync(); the kernel writes dirty pages back from "
                   f"~{wb['background_mib']:,} MiB dirty and throttles writers from ~{wb['throttle_mib']:,} MiB; "
                   f"dirty MiB at the end of each ~1 MiB-batch run: "
                   f"{', '.join(str(x.get('dirty_mib_after')) for x in runs)}.")
    return out


def console_summary(r: dict) -> str:
    out = []
    for row in figures(r):
        out.append(f"{row['name']:<58} {_num(row['value'], row['unit']):>16}   "
                   f"target {_x(row['ratio_to_target']):>6}   limit {_x(row['ratio_to_limit']):>6}   "
                   f"{row['status']}")
    return "\n".join(out)


def write(r: dict, directory: Path, stem: str) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    r = {**r, "figures": figures(r)}
    jp, mp_ = directory / f"{stem}.json", directory / f"{stem}.md"
    jp.write_text(json.dumps(r, indent=1, default=str) + "\n")
    mp_.write_text(markdown(r))
    return jp, mp_


def summarise(runs: list[dict], **extra) -> dict:
    """One phase's runs as medians and totals; every run is kept under "runs"."""
    med = statistics.median(r["rate"] for r in runs)
    return {"status": "ok", "rate_median": med,
            "mb_s": statistics.median(r["mb_s"] for r in runs),
            "msgs_s": statistics.median(r.get("msgs_s") or 0 for r in runs) or None,
            "records": sum(r["records"] for r in runs), "bytes": sum(r["bytes"] for r in runs),
            "seconds": sum(r["seconds"] for r in runs),
            "broker_cpu_s": _sum_or_none(r["broker_cpu_s"] for r in runs),
            "client_cpu_s": sum(r["client_cpu_s"] for r in runs),
            "avg_batch_bytes": mean_present([r.get("avg_batch_bytes") for r in runs]),
            "avg_batch_records": mean_present([r.get("avg_batch_records") for r in runs]),
            "avg_batch_bytes_per_record": _per_record(runs),
            "page_cache_write_mb_s": _median([r.get("page_cache_write_mb_s") for r in runs]),
            "paired_ratio_to_page_cache": _median([r["mb_s"] / r["page_cache_write_mb_s"] for r in runs
                                                   if r.get("page_cache_write_mb_s")]),
            "runs": runs, **extra}


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def mean_present(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def _sum_or_none(xs):
    xs = list(xs)
    return None if any(x is None for x in xs) else sum(xs)


def _per_record(runs):
    b = mean_present([r.get("avg_batch_bytes") for r in runs])
    n = mean_present([r.get("avg_batch_records") for r in runs])
    return b / n if b and n else None
