"""disk_bound.py's table and plot: IOs per 1,000 records per cell, and the msg/s those counts
allow on two disks.

Projection: a disk that completes `iops` requests per second and `mb_s` megabytes per second
carries at most min(iops × 1000 / IOs per 1,000 records, mb_s × 10^6 / bytes per record written)
records per second. An IO here is a device write request or a cache flush, as the loop device
counted them (one request carries up to 1,280 KiB on it: a cloud volume that bills 256 KiB per IO
would count the commitlog's big sequential writes several times, so its projection is the kinder
one for large writes). The plot draws the projections beside the msg/s each cell made here with
no cap: where that is lower, this VM's CPU and load generator, not the disk, are the limit.
"""

from __future__ import annotations

import datetime
import math
from pathlib import Path

DISKS = (("HDD", 200, 150.0), ("gp3 baseline", 3000, 125.0))  # name, IOPS, MB/s
FLUSH_LABEL = {"default": "page cache", "1": "flush.messages=1"}


def per_k(p: dict, value: float) -> float:
    return value * 1000 / p["records"]


def ios_per_k(p: dict) -> float:
    return per_k(p, p["writes"] + p["flushes"])


def projected(p: dict, iops: int, mb_s: float) -> tuple[float, bool]:
    """(msg/s, whether bandwidth rather than IOPS is the bound)."""
    by_iops = iops * 1000 / max(ios_per_k(p), 1e-9)
    by_bytes = mb_s * 1e6 / max(p["write_mb"] * 1e6 / p["records"], 1e-9)
    return min(by_iops, by_bytes), by_bytes < by_iops


def _ok(cell: dict, name: str) -> dict | None:
    p = cell.get(name)
    return p if p and "error" not in p else None


def _syscalls(cell: dict) -> tuple[str, str]:
    s = _ok(cell, "strace")
    if not s or s.get("syscalls") is None:
        return "—", "—"
    calls = s["syscalls"]
    syncs = calls.get("fsync", 0) + calls.get("fdatasync", 0)
    writes = sum(v for k, v in calls.items() if k not in ("fsync", "fdatasync"))
    return f"{per_k(s, syncs):,.1f}", f"{per_k(s, writes):,.0f}"


def table(cells: list[dict], iops: int) -> list[str]:
    head = ("| layout | partitions | flush | records | writes | flushes | IOs | MB | fsyncs (strace) "
            "| write calls (strace) | " + " | ".join(f"at {n} ({i:,} IOPS)" for n, i, _ in DISKS)
            + " | here, no cap | " + (f"here, {iops:,} IOPS cap |" if iops else "|"))
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for c in cells:
        p = _ok(c, "count")
        row = [c["mode"], f"{c['partitions']:,}", FLUSH_LABEL[c["flush"]]]
        if not p:
            lines.append("| " + " | ".join(row + [c.get("count", {}).get("error", "not run")[:80]]) + " |")
            continue
        fs, ws = _syscalls(c)
        row += [f"{p['records']:,}", f"{per_k(p, p['writes']):,.1f}", f"{per_k(p, p['flushes']):,.1f}",
                f"{ios_per_k(p):,.1f}", f"{per_k(p, p['write_mb']):,.2f}", fs, ws]
        for _, disk_iops, mb_s in DISKS:
            rate, by_bytes = projected(p, disk_iops, mb_s)
            row.append(f"{rate:,.0f}" + (" (MB/s)" if by_bytes else ""))
        row.append(f"{p['msgs_s']:,.0f}")
        if iops:
            t = _ok(c, "throttled")
            row.append(f"{t['msgs_s']:,.0f} ({per_k(t, t['writes'] + t['flushes']):,.1f} IOs)" if t else
                       c.get("throttled", {}).get("error", "—")[:60])
        lines.append("| " + " | ".join(row) + " |")
    return lines


def crossovers(points: list[tuple[int, float, float]]) -> list[float]:
    """Partition counts where commitlog's rate and segment's cross, either way, interpolated on
    log(partitions)."""
    found = []
    for (n0, s0, c0), (n1, s1, c1) in zip(points, points[1:]):
        d0, d1 = math.log(c0 / s0), math.log(c1 / s1)
        if (d0 <= 0 < d1) or (d1 <= 0 < d0):
            x0, x1 = math.log10(n0), math.log10(n1)
            found.append(10 ** (x0 + (x1 - x0) * d0 / (d0 - d1)))
    return found


def plot(cells: list[dict], iops: int, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    flushes = [f for f in FLUSH_LABEL if any(c["flush"] == f for c in cells)]
    fig, axes = plt.subplots(1, len(flushes), figsize=(6 * len(flushes), 4.5), squeeze=False)
    colours = {"segment": "tab:blue", "commitlog": "tab:orange"}
    for ax, flush in zip(axes[0], flushes):
        by = {(c["mode"], c["partitions"]): c for c in cells if c["flush"] == flush and _ok(c, "count")}
        counts = sorted({n for _, n in by})
        for (disk, disk_iops, mb_s), style in zip(DISKS, (":", "--")):
            series = {}
            for mode, colour in colours.items():
                pts = [(n, projected(by[mode, n]["count"], disk_iops, mb_s)[0]) for n in counts if (mode, n) in by]
                series[mode] = dict(pts)
                if pts:
                    ax.plot(*zip(*pts), style, color=colour, marker="o", ms=3, label=f"{mode}, {disk} {disk_iops:,} IOPS")
            both = [(n, series["segment"][n], series["commitlog"][n]) for n in counts
                    if n in series.get("segment", {}) and n in series.get("commitlog", {})]
            for x in crossovers(both):
                ax.axvline(x, color="grey", linestyle=style, linewidth=1)
                low = min(min(s, c) for _, s, c in both)
                ax.annotate(f"crossover, {disk}: ~{x:,.0f}", (x, low), rotation=90, fontsize=7, va="bottom", ha="right")
        for mode, colour in colours.items():
            pts = [(n, by[mode, n]["count"]["msgs_s"]) for n in counts if (mode, n) in by]
            if pts:
                ax.plot(*zip(*pts), "-", color=colour, alpha=0.35, linewidth=3, label=f"{mode}, this VM, no cap")
        if iops:
            for mode, colour in colours.items():
                pts = [(n, by[mode, n]["throttled"]["msgs_s"]) for n in counts
                       if (mode, n) in by and _ok(by[mode, n], "throttled")]
                if pts:
                    ax.plot(*zip(*pts), "x", color=colour, ms=9, mew=2, label=f"{mode}, measured at {iops:,} IOPS cap")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("partitions")
        ax.set_ylabel("records/s (1 KB, acks=all)")
        ax.set_title(f"{FLUSH_LABEL[flush]}: msg/s the disk allows")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def write_report(cells: list[dict], facts: dict, settings: dict, results_dir: Path) -> str:
    iops = int(settings.get("iops") or 0)
    lines = [f"# Disk IOs per 1,000 records, per layout ({datetime.date.today()})", "",
             f"Machine: {facts.get('nproc')} cores, kernel {facts.get('kernel')}, cgroup {facts.get('cgroup')}; "
             f"data on {facts.get('device')} ({facts.get('backing')}); IOPS cap: {facts.get('iops_limit', 'not tried')}; "
             f"load average before {', '.join(f'{x:.1f}' for x in facts.get('load_before', ()))}, "
             f"after {', '.join(f'{x:.1f}' for x in facts.get('load_after', ()))}.", "",
             f"{settings.get('value_size')}-byte records, null keys, acks=all, random partitioner; per cell up to "
             f"{int(settings.get('records', 0)):,} records or {settings.get('seconds')} s (strace pass "
             f"{int(settings.get('strace_records', 0)):,} or {settings.get('strace_seconds')} s). Columns writes..MB "
             "are per 1,000 records, through the closing syncfs; "
             "the 'at' columns project them (disk_bound_report.py); '(MB/s)' marks a bandwidth-bound projection.", "",
             *table(cells, iops)]
    md = "\n".join(lines) + "\n"
    (results_dir / "disk_bound.md").write_text(md)
    if plot(cells, iops, results_dir / "disk_bound.png"):
        md += f"\nplot: {results_dir / 'disk_bound.png'}\n"
    return md
