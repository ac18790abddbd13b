"""Evicting a broker's data files from the page cache, for the cold-consume phase.

The machine-wide way (`echo 1 > /proc/sys/vm/drop_caches`) is refused inside this VM's
container even as root, so the phase drops only the files it will read: sync them, then
`posix_fadvise(POSIX_FADV_DONTNEED)` on each, which evicts clean pages (dirty ones would stay,
hence the sync first). Whether it worked is measured, not assumed: `fincore` (util-linux)
reports how many bytes of the files are still resident, before and after, and the report
prints both, so a "cold" figure read from a warm cache is visible as such.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def data_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def resident_bytes(files: list[Path]) -> int | None:
    """Bytes of `files` in the page cache, or None where fincore is missing or fails."""
    if not files or shutil.which("fincore") is None:
        return None
    total = 0
    for i in range(0, len(files), 500):  # keeps the command line short with 1000s of files
        chunk = [str(f) for f in files[i:i + 500]]
        done = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES", *chunk],
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            return None
        total += sum(int(x) for x in done.stdout.split())
    return total


def try_drop_caches() -> bool:
    """The global drop, where the kernel allows it (it does not in this VM's container)."""
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
        return True
    except OSError:
        return False


def evict(root: Path) -> dict:
    """Sync and evict every file under `root`; returns what was resident before and after."""
    files = data_files(root)
    total = sum(f.stat().st_size for f in files)
    before = resident_bytes(files)
    os.sync()  # dirty pages cannot be evicted; sync() returns once everything is written
    if try_drop_caches():
        method = "sync; echo 1 > /proc/sys/vm/drop_caches"
    else:
        method = "posix_fadvise(DONTNEED) per file after sync"
        for f in files:
            try:
                fd = os.open(f, os.O_RDONLY)
            except OSError:  # deleted meanwhile (retention): nothing to evict
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    after = resident_bytes(files)
    return {"method": method, "file_bytes": total, "resident_before": before, "resident_after": after,
            "files": len(files)}
