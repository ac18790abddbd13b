"""Free loopback ports for the processes a test starts, each handed out once per test process.

A port is found by binding port 0 and closing the socket, so until the broker or etcd that
gets it binds it, the kernel may hand the same port to the next caller: a cluster fixture that
picked its brokers' ports and then started etcd once gave etcd a broker's port ("Address
already in use" at the broker's start). Remembering what was handed out rules that out within
one pytest process; another process taking a port in between stays possible, and rare.
"""

from __future__ import annotations

import socket
import threading

_handed_out: set[int] = set()
_lock = threading.Lock()


def free_port() -> int:
    with _lock:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _handed_out:
                _handed_out.add(port)
                return port
