"""A twinlog broker for the demo: `twinlog serve` on a temporary data dir and a free port.

The demo talks to it over the network only, like any Kafka user would; it is a subprocess so
the broker's event loop does not compete with Spark's Python workers for the same interpreter.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from spark.client_config import LIBRDKAFKA_LOG


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedBroker:
    def __init__(self, storage_mode: str = "segment", keep: bool = False):
        self.keep = keep  # leave the data dir after stop(), for a user to look at
        self.workdir = Path(tempfile.mkdtemp(prefix="twinlog-demo-"))
        self.port = _free_port()
        self.storage_mode = storage_mode
        self.bootstrap = f"127.0.0.1:{self.port}"
        self._proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> "EmbeddedBroker":
        cmd = [sys.executable, "-m", "broker", "serve", "--data-dir", str(self.workdir / "data"),
               "--port", str(self.port), "--host", "127.0.0.1", "--storage-mode", self.storage_mode]
        self._log = open(self.workdir / "broker.log", "ab")
        self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                                      start_new_session=True)
        deadline = time.monotonic() + timeout
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "logger": LIBRDKAFKA_LOG})
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"twinlog exited with {self._proc.returncode}; see {self.workdir / 'broker.log'}")
            try:
                admin.list_topics(timeout=1)
                return self
            except Exception:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"twinlog did not answer on {self.bootstrap} within {timeout}s")
                time.sleep(0.2)

    def create_topics(self, partitions: dict[str, int]) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "logger": LIBRDKAFKA_LOG})
        futures = admin.create_topics([NewTopic(t, n, 1) for t, n in partitions.items()])
        for f in futures.values():
            f.result(30)
        deadline = time.monotonic() + 30
        while True:  # wait until Metadata shows every partition
            topics = admin.list_topics(timeout=5).topics
            if all(t in topics and len(topics[t].partitions) == n for t, n in partitions.items()):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"topics {partitions} not ready")
            time.sleep(0.1)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
        if self._proc is not None:
            self._log.close()
        if not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
