"""Loopback ports for the processes a test starts, never handed to two live test processes.

A broker or etcd is told its port before it starts (a cluster's brokers must know each other's
ports, and a restarted broker keeps its own), so the harness picks ports itself. Two things can
take such a port between the pick and the process's bind, or between a stop and a restart:

- another test process picking the same port: pytest-xdist workers, or a second pytest run on
  the same machine. Ports are therefore handed out from blocks of BLOCK_SIZE, and a process owns
  a block while it holds an exclusive flock on the block's lock file (in LOCK_DIR). The kernel
  drops the lock when the process exits, however it exits, so there is nothing stale to clean.
- the kernel itself, which gives the ports of its ephemeral range (ip_local_port_range, 32768
  and up by default) to outgoing connections: a client's connection once took a stopped broker's
  port before the broker restarted on it. The blocks lie below that range, in FIRST_PORT up to
  the range's start, where the kernel never picks a port on its own.

Within its blocks a process hands each port out once, skipping any that something else has
bound (checked by binding it).
"""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
import threading
from pathlib import Path

FIRST_PORT = 10_000
BLOCK_SIZE = 64
LOCK_DIR = Path(tempfile.gettempdir()) / "twinlog-test-ports"


def _ephemeral_start() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


class _PortBlocks:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, int] = {}  # block start -> its lock file's descriptor, kept open
        self._next = self._end = 0
        self._owner = os.getpid()

    def next_port(self) -> int:
        with self._lock:
            if self._owner != os.getpid():  # a forked child: its parent's blocks are not its own
                self.__init__()
            while True:
                if self._next >= self._end:
                    self._claim_block()
                port, self._next = self._next, self._next + 1
                if _bindable(port):
                    return port

    def _claim_block(self) -> None:
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        last = _ephemeral_start()
        for start in range(FIRST_PORT, last - BLOCK_SIZE + 1, BLOCK_SIZE):
            if start in self._held:
                continue
            fd = os.open(LOCK_DIR / f"{start}.lock", os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another live process owns this block
                os.close(fd)
                continue
            self._held[start] = fd
            self._next, self._end = start, start + BLOCK_SIZE
            return
        raise RuntimeError(f"every block of test ports from {FIRST_PORT} to {last} is held "
                           f"(lock files in {LOCK_DIR}): too many test processes at once")


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_blocks = _PortBlocks()


def free_port() -> int:
    return _blocks.next_port()
