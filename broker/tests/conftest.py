"""Fixtures the broker's unit tests share."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest


class SmallDisk:
    """A tmpfs of a test's own, mounted on `path` (the suite runs as root, as CI does)."""

    def __init__(self, path: Path, size: str) -> None:
        self.path = path
        path.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)

    def fill(self) -> Path:
        """Take every free page with one file; returns it (unlink it to give the room back)."""
        filler = self.path / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            for chunk in (b"\0" * (1 << 20), b"\0" * 4096):
                try:
                    while True:
                        os.write(fd, chunk)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
        finally:
            os.close(fd)
        return filler

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], check=False)


@pytest.fixture
def small_disk(tmp_path):
    """small_disk(size) -> a SmallDisk of that size ("48m", "256k"), unmounted after the test."""
    disks = []

    def mount(size: str) -> SmallDisk:
        disks.append(SmallDisk(tmp_path / f"disk{len(disks)}", size))
        return disks[-1]

    yield mount
    for disk in disks:
        disk.unmount()
