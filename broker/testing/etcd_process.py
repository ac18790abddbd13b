"""A real etcd server for tests: one member on free loopback ports, data in a temp directory.

`EtcdProcess` runs Debian's `etcd` (package etcd-server, installed by install_deps.sh) as a
subprocess. It counts as up only when its /health endpoint answers `"health":"true"`, which
etcd says once the member has elected itself raft leader and can serve reads and writes.

Heartbeat 50 ms and election timeout 500 ms (etcd's defaults are 100 / 1000) make a one-member
start quicker and lower etcd's smallest lease TTL from 2 s to 1 s: etcd raises any shorter TTL
to ceil(1.5 * election ticks * heartbeat), so tests can use 1-second broker sessions.

`pause()` / `resume()` SIGSTOP / SIGCONT the server — etcd unreachable without losing its data,
as during a network partition; `stop()` then `start()` restarts it on the same ports and data.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from broker.testing.ports import free_port

ETCD_BINARY_CANDIDATES = ("/usr/bin/etcd", "/usr/local/bin/etcd")


class EtcdStartError(RuntimeError):
    pass


def etcd_binary() -> str:
    for candidate in (os.environ.get("TWINLOG_ETCD_BIN"), shutil.which("etcd"), *ETCD_BINARY_CANDIDATES):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise EtcdStartError("no etcd binary: run `bash compat_tests/install_deps.sh` "
                         "(Debian package etcd-server) or set TWINLOG_ETCD_BIN")


_LIVE: set["EtcdProcess"] = set()


@atexit.register
def _kill_leftovers() -> None:
    for etcd in list(_LIVE):
        etcd.kill()


class EtcdProcess:
    """One etcd member; `start()` again after `stop()` reuses its ports and data dir."""

    def __init__(self, workdir: str | os.PathLike | None = None) -> None:
        self.host = "127.0.0.1"
        self.client_port = free_port()
        self.peer_port = free_port()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="twinlog-etcd-"))
        self.data_dir = self.workdir / "etcd-data"
        self.log_path = self.workdir / "etcd.log"
        self._proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        """The client URL, as `twinlog serve --etcd` takes it."""
        return f"http://{self.host}:{self.client_port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        client = self.endpoint
        peer = f"http://{self.host}:{self.peer_port}"
        return [
            etcd_binary(), "--name", "twinlog-test", "--data-dir", str(self.data_dir),
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"twinlog-test={peer}", "--initial-cluster-state", "new",
            "--heartbeat-interval", "50", "--election-timeout", "500",
            "--log-level", "warn",
        ]

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 20.0) -> "EtcdProcess":
        if self.is_running():
            raise EtcdStartError(f"etcd pid {self.pid} is already running")
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start at {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                self.command(), cwd=str(self.workdir), stdin=subprocess.DEVNULL, stdout=log,
                stderr=log, start_new_session=True)
        _LIVE.add(self)
        try:
            self._wait_until_healthy(timeout)
        except BaseException:
            self.kill()
            raise
        return self

    def _wait_until_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last_error: object = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise EtcdStartError(f"etcd exited with code {self._proc.returncode} during startup\n"
                                     f"{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.endpoint}/health", timeout=1) as reply:
                    health = json.loads(reply.read())
                if health.get("health") == "true":
                    return
                last_error = health
            except (OSError, ValueError, urllib.error.URLError) as e:
                last_error = e
            time.sleep(0.05)
        raise EtcdStartError(f"etcd not healthy on {self.endpoint} within {timeout}s "
                             f"(last: {last_error!r})\n{self.log_tail()}")

    def pause(self, timeout: float = 5.0) -> None:
        """SIGSTOP, returning once every thread of etcd is stopped: kill() only queues the
        signal, and a thread whose CPU the host has not run yet (a loaded VM) can still answer
        a request sent right after it (test_metadata_watch saw a read succeed that way)."""
        self._proc.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + timeout
        while not _all_threads_stopped(self._proc.pid):
            if time.monotonic() > deadline:
                raise EtcdStartError(f"etcd pid {self.pid} not stopped {timeout}s after SIGSTOP")
            time.sleep(0.001)

    def resume(self) -> None:
        self._proc.send_signal(signal.SIGCONT)

    def stop(self, timeout: float = 10.0) -> None:
        if not self.is_running():
            return
        self._proc.send_signal(signal.SIGCONT)  # a paused etcd cannot act on SIGTERM
        self._proc.terminate()
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        _LIVE.discard(self)

    def kill(self) -> None:
        if self.is_running():
            self._proc.kill()
            self._proc.wait(10)
        _LIVE.discard(self)

    def cleanup(self) -> None:
        self.kill()
        if self._own_workdir and not os.environ.get("TWINLOG_COMPAT_KEEP"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "(no etcd log)"
        return "\n".join([f"--- last {min(lines, len(text))} lines of {self.log_path} ---", *text[-lines:]])

    def __enter__(self) -> "EtcdProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.is_running() else "stopped"
        return f"<EtcdProcess {self.endpoint} {state}>"


def _all_threads_stopped(pid: int) -> bool:
    """Whether every thread of `pid` is in the stopped state ("T" in /proc/PID/task/TID/stat)."""
    task_dir = f"/proc/{pid}/task"
    for tid in os.listdir(task_dir):
        try:
            with open(f"{task_dir}/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        if state not in ("T", "t"):
            return False
    return True
