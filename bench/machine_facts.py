"""What the numbers were measured on: cores, memory, CPU, kernel, Python, librdkafka, git commit,
and the disk's own sequential write rate, measured in the same run with

    dd if=/dev/zero of=<file beside the broker's data> bs=1M count=N conv=fdatasync

`conv=fdatasync` makes dd's figure include getting the bytes onto the device, so it is the
ceiling for a broker that syncs and the yardstick for one that leaves writes to the page cache.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# dd (coreutils) ends with e.g. "268435456 bytes (268 MB, 256 MiB) copied, 0.61 s, 440 MB/s"
_DD_SUMMARY = re.compile(r"^(\d+) bytes .* copied, ([\d.,]+) s,", re.MULTILINE)


def parse_dd(stderr: str) -> tuple[int, float]:
    """(bytes, seconds) from dd's summary line; raises if dd said something else."""
    m = _DD_SUMMARY.search(stderr)
    if not m:
        raise ValueError(f"cannot read dd's summary from: {stderr.strip()[-300:]!r}")
    return int(m.group(1)), float(m.group(2).replace(",", "."))


def disk_write_rate(directory: Path, mib: int, timeout: float) -> dict:
    """Sequential write MB/s (10^6 bytes/s) of the filesystem holding `directory`."""
    target = directory / "dd-sequential-write.bench"
    try:
        done = subprocess.run(
            ["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={mib}", "conv=fdatasync"],
            capture_output=True, text=True, timeout=timeout, env={**os.environ, "LC_ALL": "C"},
        )
        if done.returncode != 0:
            raise RuntimeError(f"dd failed ({done.returncode}): {done.stderr.strip()[-300:]}")
        nbytes, seconds = parse_dd(done.stderr)
    finally:
        target.unlink(missing_ok=True)
    if nbytes != mib << 20:
        raise RuntimeError(f"dd wrote {nbytes} bytes, asked for {mib << 20}")
    return {"bytes": nbytes, "seconds": seconds, "mb_s": nbytes / 1e6 / seconds,
            "command": f"dd if=/dev/zero of=<data dir>/file bs=1M count={mib} conv=fdatasync"}


def filesystem_of(path: Path) -> str:
    try:
        out = subprocess.run(["df", "--output=source,fstype", str(path)], capture_output=True,
                             text=True, timeout=10).stdout.split("\n")[1]
        return " ".join(out.split())
    except (OSError, IndexError, subprocess.SubprocessError):
        return "unknown"


def dirty_mib() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Dirty:"):
                return int(line.split()[1]) >> 10
    return -1


def _meminfo_gib() -> float:
    with open("/proc/meminfo") as f:
        kib = int(re.search(r"MemTotal:\s+(\d+) kB", f.read()).group(1))
    return kib / (1 << 20)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.+)", f.read())
        return m.group(1).strip() if m else platform.processor()
    except OSError:
        return platform.processor()


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _sysctl(name: str) -> int | None:
    try:
        with open(f"/proc/sys/vm/{name}") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def writeback_thresholds() -> dict:
    """Where the kernel starts writing dirty pages back in the background, and where it starts
    throttling writers: a broker that leaves durability to the page cache runs at memory speed
    below the first and at the disk's sustained rate above it. (The kernel takes the ratios of
    *dirtyable* memory; MemAvailable is close enough for a label.)"""
    with open("/proc/meminfo") as f:
        avail_mib = int(re.search(r"MemAvailable:\s+(\d+) kB", f.read()).group(1)) >> 10
    out = {}
    for kind in ("background", "throttle"):
        prefix = "dirty_background_" if kind == "background" else "dirty_"
        nbytes, ratio = _sysctl(prefix + "bytes"), _sysctl(prefix + "ratio")
        out[f"{kind}_mib"] = (nbytes >> 20) if nbytes else (avail_mib * ratio // 100 if ratio else None)
    return out


def machine_facts() -> dict:
    import confluent_kafka

    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "nproc": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "memory_gib": round(_meminfo_gib(), 1),
        "cpu_model": _cpu_model(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "confluent_kafka": confluent_kafka.__version__,
        "librdkafka": confluent_kafka.libversion()[0],
        "dirty_writeback": writeback_thresholds(),
        "git_commit": _git("rev-parse", "--short=12", "HEAD") + (" (+local changes)" if dirty else ""),
    }
