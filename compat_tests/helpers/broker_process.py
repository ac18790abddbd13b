"""A broker under test, run as a real subprocess on a free loopback port.

`BrokerProcess` starts either twinlog (`twinlog serve ...`, the default) or, when the
environment says TWINLOG_COMPAT_BROKER=tansu, the Tansu peer broker that the harness was
developed against. Its stdout and stderr go to one log file that survives restarts (each start
writes a marker line), so a failing test can show what the broker said.

A broker counts as up only when a real ApiVersions v0 request gets a well-formed reply with
error code 0: an open port alone says nothing about whether the request path works. Starting,
waiting and stopping are broker/testing/twinlog_broker.py's (the public fixture's) core; this class adds what
the compat tests need on top: a fixed port and data dir kept across restarts, kill -9, Tansu.
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from broker.testing import twinlog_broker as testing
from broker.testing.ports import free_port  # noqa: F401 (also imported from here by tests)
from broker.testing.twinlog_broker import BrokerStartError

COMPAT_TESTS = Path(__file__).resolve().parents[1]  # the rooms, java/, kafka_python_suite/ and .deps/
ROOT = COMPAT_TESTS.parent
DEPS = COMPAT_TESTS / ".deps"

# Storage modes every compat test runs under. Adding the commitlog engine is this one line.
DEFAULT_STORAGE_MODE = "segment"
STORAGE_MODES = ["segment", "commitlog"]

BROKER_KINDS = ("twinlog", "tansu")


def broker_kind() -> str:
    kind = os.environ.get("TWINLOG_COMPAT_BROKER", "twinlog").strip().lower() or "twinlog"
    if kind not in BROKER_KINDS:
        raise RuntimeError(f"TWINLOG_COMPAT_BROKER={kind!r}: expected one of {BROKER_KINDS}")
    return kind


def api_versions_roundtrip(host: str, port: int, timeout: float = 2.0) -> list[tuple[int, int, int]]:
    """Send ApiVersions v0 and return [(api_key, min, max)]; raise on anything malformed."""
    client_id = b"twinlog-compat-probe"
    correlation_id = 0x7E57
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", _recv_exactly(s, 4))[0]
        if not 6 <= size <= 1 << 20:
            raise ConnectionError(f"ApiVersions reply has implausible size {size}")
        reply = _recv_exactly(s, size)
    got_corr, error_code = struct.unpack_from(">ih", reply, 0)
    if got_corr != correlation_id:
        raise ConnectionError(f"ApiVersions correlation id {got_corr} != {correlation_id}")
    if error_code != 0:
        raise ConnectionError(f"ApiVersions v0 answered error code {error_code}")
    (count,) = struct.unpack_from(">i", reply, 6)
    return [struct.unpack_from(">hhh", reply, 10 + 6 * i) for i in range(count)]


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def _probe(host: str, port: int) -> None:
    try:
        api_versions_roundtrip(host, port)
    except struct.error as exc:  # a reply too short for its own counts
        raise ConnectionError(f"ApiVersions reply does not parse: {exc}") from None


_LIVE: set["BrokerProcess"] = set()


@atexit.register
def _kill_leftovers() -> None:
    for broker in list(_LIVE):
        broker.kill()


class BrokerProcess:
    """One broker process; `start()` again after `stop()`/`kill()` reuses port and data dir."""

    def __init__(
        self,
        kind: str | None = None,
        storage_mode: str = DEFAULT_STORAGE_MODE,
        extra_args: list[str] | tuple[str, ...] = (),
        port: int | None = None,
        workdir: str | os.PathLike | None = None,
        metrics: bool = False,
    ) -> None:
        """`metrics`: serve /metrics on a free port, kept in `metrics_port`."""
        self.kind = kind or broker_kind()
        self.storage_mode = storage_mode
        self.metrics_port = free_port() if metrics else None
        self.extra_args = list(extra_args) + (["--metrics-port", str(self.metrics_port)] if metrics else [])
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=f"{self.kind}-compat-"))
        self.data_dir = self.workdir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.workdir / "broker.log"
        self._proc: subprocess.Popen | None = None
        self._starts = 0

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        if self.kind == "tansu":
            url = f"tcp://{self.host}:{self.port}"
            return [_tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
                    *self.extra_args]
        cli = ROOT / ".venv" / "bin" / "twinlog"
        base = [str(cli)] if cli.exists() else [sys.executable, "-m", "broker"]
        cmd = [*base, "serve", "--data-dir", str(self.data_dir), "--port", str(self.port),
               "--host", self.host]
        # Only pass the flag when it matters, so a broker that predates it still starts.
        if self.storage_mode != DEFAULT_STORAGE_MODE:
            cmd += ["--storage-mode", self.storage_mode]
        return cmd + shlex.split(os.environ.get("TWINLOG_COMPAT_EXTRA_ARGS", "")) + self.extra_args

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 30.0) -> "BrokerProcess":
        if self.is_running():
            raise BrokerStartError(f"broker pid {self.pid} is already running")
        self._starts += 1
        cmd = self.command()
        banner = f"\n===== start #{self._starts} at {time.strftime('%H:%M:%S')}: {' '.join(cmd)}"
        self._proc = testing.launch(cmd, self.log_path, cwd=self.workdir, banner=banner)
        _LIVE.add(self)
        try:
            testing.wait_until_answering(self._proc, (self.host, self.port), timeout, self.log_path,
                                         name=self.kind, probe=_probe)
        except BaseException:
            self.kill()
            raise
        return self

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM and wait for a clean exit; SIGKILL (and raise) if it does not come."""
        if self._proc is None:
            return None
        if not testing.terminate(self._proc, timeout):
            _LIVE.discard(self)
            raise BrokerStartError(
                f"{self.kind} pid {self.pid} ignored SIGTERM for {timeout}s; killed it\n{self.log_tail()}")
        _LIVE.discard(self)
        return self._proc.returncode

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks, no flush; what is on disk is what the OS has."""
        if self._proc is not None:
            testing.kill(self._proc)
        _LIVE.discard(self)

    def restart(self, timeout: float = 30.0) -> "BrokerProcess":
        self.stop()
        return self.start(timeout)

    def cleanup(self) -> None:
        self.kill()
        if self._own_workdir and not os.environ.get("TWINLOG_COMPAT_KEEP"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except FileNotFoundError:
            return 0

    def log_text(self, since: int = 0) -> str:
        return testing.read_log(self.log_path, since)

    def log_tail(self, lines: int = 60, since: int = 0) -> str:
        return testing.log_tail(self.log_path, lines, since)

    def __enter__(self) -> "BrokerProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.is_running() else "stopped"
        return f"<BrokerProcess {self.kind} {self.bootstrap} {self.storage_mode} {state}>"


def _tansu_binary() -> str:
    candidates = [os.environ.get("TWINLOG_TANSU_BIN"), str(DEPS / "tansu" / "tansu"), shutil.which("tansu")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    raise BrokerStartError(
        "TWINLOG_COMPAT_BROKER=tansu but no tansu binary: run "
        "`TWINLOG_COMPAT_BROKER=tansu bash compat_tests/install_deps.sh` or set TWINLOG_TANSU_BIN")
