"""Results of compare.py: JSON (everything), CSV (one row per produce cell), markdown (tables and
the issue's targets with their ratios) and two PNG plots (throughput against partitions per
record size; latency CDFs).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

# The p99 targets at half peak, one partition: (record size, durability, p99 ms, what it is).
# latency_runs.py holds them over consecutive runs (issue 38: "in each of 5 runs").
LATENCY_TARGETS = [(100, "page_cache", 2.0, "acks=1 (100 B, page cache)"),
                   (1024, "fsync_ack", 5.0, "fsync before ack (1 KB)")]
DURABILITY_LABEL = {"page_cache": "page cache", "fsync_100ms": "fsync every 100 ms",
                    "fsync_ack": "fsync before ack", "memory": "memory (Tansu)"}


def find(r: dict, broker: str, mode: str, partitions: int, size: int, durability: str) -> dict | None:
    for row in r["produce"]:
        if (row["broker"], row["mode"], row["partitions"], row["record_size"], row["durability"],
                row.get("client", "confluent-kafka")) == (broker, mode, partitions, size, durability, "confluent-kafka"):
            return row
    return None


def _get(row: dict | None, *path):
    for key in path:
        if not isinstance(row, dict) or key not in row:
            return None
        row = row[key]
    return row


def _mock(r: dict, size: int):
    return _get(r["limits"], "mock", str(size), "msgs_s")


def targets(r: dict) -> list[dict]:
    """The issue's targets, per storage mode, each with its figure, goal and ratio."""
    out = []
    disk = _get(r["limits"], "disk", "mb_s")

    def add(name, mode, value, goal, higher_is_better=True, unit=""):
        if value is None or goal is None:
            out.append({"target": name, "mode": mode, "value": value, "goal": goal, "ratio": None, "met": None,
                        "unit": unit})
            return
        ratio = value / goal if higher_is_better else goal / value if value else None
        out.append({"target": name, "mode": mode, "value": value, "goal": goal, "ratio": ratio,
                    "met": value >= goal if higher_is_better else value <= goal, "unit": unit})

    modes = sorted({row["mode"] for row in r["produce"] if row["broker"] == "twinlog"})
    for mode in modes:
        big = find(r, "twinlog", mode, 1, 16384, "page_cache")
        add("~1 MiB-batch produce ≥ 50% of disk rate", mode, _get(big, "throughput", "mb_s"),
            0.5 * disk if disk else None, unit="MB/s")
        small = find(r, "twinlog", mode, 1, 100, "page_cache")
        add("100 B records ≥ 500k msg/s", mode, _get(small, "throughput", "msgs_s"), 500_000, unit="msg/s")
        mock = _mock(r, 100)
        add("100 B records ≥ 0.9× the mock-broker rate", mode, _get(small, "throughput", "msgs_s"),
            0.9 * mock if mock else None, unit="msg/s")
        hot = next((c for c in r["consume"] if c["broker"] == "twinlog" and c["mode"] == mode), None)
        add("fetch ≥ 2 GB/s from a hot cache", mode, _get(hot, "hot", "mb_s"), 2000, unit="MB/s")
        loopback = _get(r["limits"], "loopback", "mb_s")
        add("hot fetch ≥ 0.9× loopback sendfile (raw reader, the loopback's)", mode, _get(hot, "hot_raw", "mb_s"),
            0.9 * loopback if loopback else None, unit="MB/s")
        for size, durability, goal_ms, what in LATENCY_TARGETS:
            add(f"p99 produce ≤ {goal_ms:g} ms at half peak, {what}", mode,
                _get(find(r, "twinlog", mode, 1, size, durability), "latency", "p99_ms"), goal_ms,
                higher_is_better=False, unit="ms")
    one = _get(find(r, "twinlog", "commitlog", 1, 1024, "fsync_100ms"), "throughput", "msgs_s")
    many = _get(find(r, "twinlog", "commitlog", 1000, 1024, "fsync_100ms"), "throughput", "msgs_s")
    seg = _get(find(r, "twinlog", "segment", 1000, 1024, "fsync_100ms"), "throughput", "msgs_s")
    add("1000 partitions: commitlog ≥ 70% of its 1-partition rate (1 KB, fsync 100 ms)", "commitlog",
        many, 0.7 * one if one else None, unit="msg/s")
    add("1000 partitions: commitlog ≥ 2× segment (1 KB, fsync 100 ms)", "commitlog", many,
        2 * seg if seg else None, unit="msg/s")
    return out


def _n(v, fmt="{:,.0f}") -> str:
    return "—" if v is None else fmt.format(v)


def targets_markdown(r: dict) -> str:
    lines = ["| target | mode | figure | goal | figure / goal | met |", "|---|---|---|---|---|---|"]
    found = targets(r)
    for t in found:
        fmt = "{:,.2f}" if t["unit"] == "ms" else "{:,.0f}"
        met = "—" if t["met"] is None else ("yes" if t["met"] else "**no**")
        ratio = "—" if t["ratio"] is None else f"{t['ratio']:.2f}"
        lines.append(f"| {t['target']} | {t['mode']} | {_n(t['value'], fmt)} {t['unit']} | "
                     f"{_n(t['goal'], fmt)} {t['unit']} | {ratio} | {met} |")
    if any(t["unit"] == "ms" for t in found):
        lines.append("\nFor latency targets, figure / goal is goal ÷ figure: above 1 is inside the target.")
    return "\n".join(lines) + "\n"


SPLIT_COLUMNS = ("queue_p99_ms", "send_buffer_p99_ms", "round_trip_p99_ms")  # latency_workers.p99_split


def csv_rows(r: dict) -> list[dict]:
    disk = _get(r["limits"], "disk", "mb_s")
    rows = []
    for row in r["produce"]:
        t, lat = row.get("throughput", {}), row.get("latency", {})
        mock = _mock(r, row["record_size"])
        rows.append({
            "broker": row["broker"], "client": row.get("client", "confluent-kafka"), "mode": row["mode"],
            "partitions": row["partitions"],
            "record_size": row["record_size"], "durability": row["durability"],
            "msgs_s": t.get("msgs_s"), "mb_s": t.get("mb_s"),
            "x_disk": t["mb_s"] / disk if t.get("mb_s") and disk else None,
            "x_mock": t["msgs_s"] / mock if t.get("msgs_s") and mock else None,
            "broker_cpu": t.get("broker_cpu"), "client_cpu": t.get("client_cpu"),
            "avg_batch_bytes": t.get("avg_batch_bytes"), "latency_rate": lat.get("rate_achieved"),
            "p50_ms": lat.get("p50_ms"), "p99_ms": lat.get("p99_ms"), "p999_ms": lat.get("p999_ms"),
            **{k: lat.get(k) for k in SPLIT_COLUMNS},
            "mock_p99_ms": _get(row, "latency_vs_mock", "p99_ms"),
            "disk_fsync_p99_ms": _get(row, "disk_fsync", "p99_ms"), "disk_fsync_max_ms": _get(row, "disk_fsync", "max_ms"),
            "error": row.get("error", ""),
        })
    return rows


def _pct(v) -> str:
    return "—" if v is None else f"{v:.0%}"


def markdown(r: dict) -> str:
    m, lim = r["machine"], r["limits"]
    s = r["settings"]
    lines = [f"# twinlog: segment vs commitlog ({r['profile']} profile, {r['started_at']})", "",
             f"Machine: {m.get('nproc')} cores ({m.get('cpu_model', '?')}), {m.get('memory_gib', 0):.0f} GiB; "
             f"data on {r['filesystem']}; pinning: {r['pinning']}; run took {r.get('elapsed_s', 0):.0f} s; "
             f"librdkafka {m.get('librdkafka')}; commit {m.get('git_commit')}.",
             f"Load: one confluent-kafka (librdkafka) producer process, acks=1, no compression, "
             f"batch.size 1 MiB, linger.ms {s['linger_ms']} for peaks; latency phases at "
             f"{s['latency_fraction']:.0%} of the cell's peak with linger.ms {s['latency_linger_ms']} "
             f"and at most 5 requests in flight (the Java client's default); "
             f"several partitions: records spread uniformly (sticky partitioning off).", "",
             "## Limits measured in this run", "",
             "| limit | figure |", "|---|---|",
             f"| disk sequential write (dd, fdatasync) | {_n(_get(lim, 'disk', 'mb_s'))} MB/s |",
             f"| loopback sendfile (hot file → counting reader) | {_n(_get(lim, 'loopback', 'mb_s'))} MB/s |"]
    for size, mk in sorted(lim.get("mock", {}).items(), key=lambda kv: int(kv[0])):
        lines.append(f"| load generator vs librdkafka mock broker, {size} B | {mk['msgs_s']:,.0f} msg/s, "
                     f"{mk['mb_s']:,.0f} MB/s |")
    lines += ["", "## Targets", "", targets_markdown(r), "## Produce", "",
              "| broker / mode | partitions | record | durability | msg/s | MB/s | × disk | × mock | "
              "broker CPU | client CPU | latency at | p50 ms | p99 ms | p99.9 ms |", "|---" * 14 + "|"]
    for row in csv_rows(r):
        who = row["mode"] if row["broker"] == "twinlog" else f"{row['broker']} ({row['mode']})"
        who += "" if row["client"] == "confluent-kafka" else f", {row['client']}"
        lines.append(
            f"| {who} | {row['partitions']} | {row['record_size']} B | {DURABILITY_LABEL[row['durability']]} | "
            f"{_n(row['msgs_s'])} | {_n(row['mb_s'], '{:,.1f}')} | {_n(row['x_disk'], '{:.2f}')} | "
            f"{_n(row['x_mock'], '{:.2f}')} | {_pct(row['broker_cpu'])} | {_pct(row['client_cpu'])} | "
            f"{_n(row['latency_rate'])}/s | "
            f"{_n(row['p50_ms'], '{:.2f}')} | {_n(row['p99_ms'], '{:.2f}')} | {_n(row['p999_ms'], '{:.2f}')} |")
    lines += ["", "## Where a send → ack p99 goes", "",
              "librdkafka's statistics of the latency phase, p99 ms (its per-second windows weighted by "
              "count): a record in the client's queue (linger, a free slot of 5 in flight), a request "
              "waiting to be written, its round trip (the network and the broker). Last column: the "
              "same paced load, right after, against librdkafka's mock cluster on the broker's CPU "
              "(in memory, in C; a reference broker, not the load generator's floor). For fsync before "
              "ack, the disk's own fsync p99 / max at the cell's bytes/s, measured right after it by a "
              "process that only appends and fsyncs (machine_ceilings.fsync_latency).", "",
              "| broker / mode | partitions | record | durability | send → ack | client queue | "
              "write wait | round trip | send → ack, same load vs mock | disk fsync p99 / max |",
              "|---" * 10 + "|"]
    for row in csv_rows(r):
        if row["round_trip_p99_ms"] is not None:
            lines.append(f"| {row['broker']} / {row['mode']} | {row['partitions']} | {row['record_size']} B | "
                         f"{DURABILITY_LABEL[row['durability']]} | {_n(row['p99_ms'], '{:.2f}')} | " +
                         " | ".join(_n(row[k], "{:.2f}") for k in (*SPLIT_COLUMNS, "mock_p99_ms")) + " | " +
                         (f"{_n(row['disk_fsync_p99_ms'], '{:.2f}')} / {_n(row['disk_fsync_max_ms'], '{:.2f}')}"
                          if row["disk_fsync_p99_ms"] is not None else "—") + " |")
    lines += ["", "## Consume (one partition, 8 MiB fetches, every offset checked)", "",
              "Hot: a confluent-kafka consumer, after one warming pass. Raw reader: bench/raw_fetch.py, "
              "the loopback limit's counting reader speaking Fetch v12 (batch headers checked, records "
              "not parsed): the broker's path without a client's copies.", "",
              "| broker / mode | record | records | hot MB/s | hot msg/s | hot MB/s, raw reader | cold MB/s | "
              "resident before → after eviction |", "|---|---|---|---|---|---|---|---|"]
    for c in r["consume"]:
        cold, ev = c.get("cold", {}), _get(c, "cold", "eviction") or {}
        resident = (f"{_n(_mib(ev.get('resident_before')))} → {_n(_mib(ev.get('resident_after')))} MiB "
                    f"of {_n(_mib(ev.get('file_bytes')))}" if ev else cold.get("skipped", "—"))
        lines.append(f"| {c['broker']} / {c['mode']} | {c['record_size']} B | {_n(c.get('records'))} | "
                     f"{_n(_get(c, 'hot', 'mb_s'))} | {_n(_get(c, 'hot', 'msgs_s'))} | "
                     f"{_n(_get(c, 'hot_raw', 'mb_s'))} | {_n(cold.get('mb_s'))} | "
                     f"{resident} |")
    lines += ["", f"## End to end (produce → consumer sees it), at {s['e2e_fraction']:.0%} of the 100 B peak", "",
              "| mode | rate | samples | p50 ms | p99 ms | p99.9 ms |", "|---|---|---|---|---|---|"]
    for e in r["e2e"]:
        lines.append(f"| {e['mode']} | {_n(e['rate_achieved'])}/s | {e['samples']:,} | {_n(e['p50_ms'], '{:.2f}')} | "
                     f"{_n(e['p99_ms'], '{:.2f}')} | {_n(e['p999_ms'], '{:.2f}')} |")
    if r["errors"]:
        lines += ["", "## Failed steps", ""] + [f"- {e}" for e in r["errors"]]
    lines += ["", "Tansu 0.6.0 keeps records in memory and numbers multi-record batches wrongly (its "
              "high watermark is the last batch's base offset + 1), so its counts come from reading "
              "the tail back and its consumer rows do not check offsets."]
    return "\n".join(lines) + "\n"


def _mib(v):
    return None if v is None else v / (1 << 20)


def plot_throughput(r: dict, path: Path) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({row["record_size"] for row in r["produce"]})
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.5 * len(sizes), 3.8), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        series: dict[tuple, list] = {}
        for row in r["produce"]:
            if row["record_size"] == size and _get(row, "throughput", "msgs_s") and \
                    row.get("client", "confluent-kafka") == "confluent-kafka":
                key = (row["broker"], row["mode"], row["durability"])
                series.setdefault(key, []).append((row["partitions"], row["throughput"]["mb_s"]))
        for (broker, mode, dur), pts in sorted(series.items()):
            pts.sort()
            label = f"{mode}, {DURABILITY_LABEL[dur]}" if broker == "twinlog" else f"{broker} ({mode})"
            ax.plot(*zip(*pts), marker="o", linestyle="--" if broker != "twinlog" else "-", label=label)
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)  # the gaps between modes read true only from zero
        ax.set_xlabel("partitions")
        ax.set_ylabel("MB/s acknowledged")
        ax.set_title(f"produce, {size} B records")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def plot_latency_cdf(latencies: dict[str, list[float]], path: Path) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    chosen = {k: v for k, v in latencies.items() if v and ("/p1/" in k or k.startswith("e2e"))}
    if not chosen:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.set_prop_cycle(color=plt.get_cmap("tab20").colors)  # more curves than the default 10 colours
    for name, xs in sorted(chosen.items()):
        a = np.sort(np.asarray(xs) * 1000)
        ax.plot(a, np.arange(1, len(a) + 1) / len(a), label=name.replace("twinlog/", ""))
    ax.set_xscale("log")
    ax.set_xlabel("latency, ms (send → ack; e2e: send → consumer)")
    ax.set_ylabel("fraction of records")
    ax.set_title("latency CDF at a fraction of peak, one partition")
    ax.axhline(0.99, color="grey", linewidth=0.5)
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def write(r: dict, latencies: dict[str, list[float]], directory: Path, stem: str) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    r["targets"] = targets(r)
    paths = [directory / f"{stem}.json", directory / f"{stem}.csv", directory / f"{stem}.md"]
    paths[0].write_text(json.dumps(r, indent=1, default=str))
    rows = csv_rows(r)
    with open(paths[1], "w", newline="") as f:
        if rows:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    paths[2].write_text(markdown(r))
    if r["produce"] and plot_throughput(r, directory / f"{stem}-throughput.png"):
        paths.append(directory / f"{stem}-throughput.png")
    if plot_latency_cdf(latencies, directory / f"{stem}-latency.png"):
        paths.append(directory / f"{stem}-latency.png")
    return paths
