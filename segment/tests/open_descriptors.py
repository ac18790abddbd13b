"""This process's open file descriptors under a directory, read from /proc/self/fd."""

from __future__ import annotations

import os


def fds_under(directory) -> list[str]:
    """Paths of this process's open descriptors that point into `directory`."""
    out = []
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # the listing's own descriptor, gone by now
        if target.startswith(str(directory)):
            out.append(target)
    return out
