"""One broker per data dir: Kafka's `.lock` file, held with flock for the process's life.

Two brokers writing one set of logs would interleave appends and truncations and corrupt both
(the second also recovers "torn" tails the first is still writing). Kafka takes an exclusive
lock on `<log.dir>/.lock` at start and refuses to start when another process holds it; so do we.

The lock is the kernel's (flock(2) on an open descriptor), not the file's existence: a broker
that crashed or was SIGKILLed leaves the file behind but not the lock, so the next start needs
no clean-up. The file stays empty and is never removed (removing it would let a third process
lock a new inode while the second still holds the old one).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = ".lock"


class DataDirUnusable(Exception):
    """The data dir cannot be created, opened or locked; the message is one line for the operator."""


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        """Create the data dir if needed and take the lock; raises DataDirUnusable."""
        if self.path.parent.exists() and not self.path.parent.is_dir():
            raise DataDirUnusable(f"cannot use data dir {self.path.parent}: it is not a directory")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise DataDirUnusable(f"cannot use data dir {self.path.parent}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataDirUnusable(
                f"data dir {self.path.parent} is in use by another broker (it holds {self.path})") from None
        except OSError as exc:
            os.close(fd)
            raise DataDirUnusable(f"cannot lock {self.path}: {exc.strerror or exc}") from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None
