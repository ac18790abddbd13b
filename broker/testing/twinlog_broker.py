"""A real twinlog broker for tests, as a subprocess on a free port and a temporary data dir.

    from broker.testing import TwinlogBroker

    with TwinlogBroker(storage_mode="commitlog") as broker:
        broker.create_topic("orders", partitions=3)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

pytest users get the same broker as the `twinlog_broker` fixture (broker/testing/pytest_plugin.py,
registered through the `pytest11` entry point), which adds the broker's log to a failing test's
report.

The broker is started as `python -m broker serve --port 0`: the kernel picks the port, so two
test runs never race for one, and the port is read from the broker's "twinlog listening on
HOST:PORT" line (logged at INFO, once the port accepts connections). It counts as up once it
answers ApiVersions (broker/cli/kafka_client.py, the CLI's own client: no test extras needed).

The start / wait / stop core below (launch, wait_until_answering, terminate, kill, log_tail) is
shared by compat_tests' BrokerProcess, bench's launcher and the Spark demo's broker: each runs its
broker in its own session (process group), so a stop reaches whatever it forks.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from broker.cli.kafka_client import ClientError, KafkaClient

_LISTENING = re.compile(r"twinlog listening on (\S+):(\d+),")
_METADATA = 3  # api key; probing its version makes the client send ApiVersions


class BrokerStartError(RuntimeError):
    """The broker exited during start-up or did not answer in time; the message ends with its log's tail."""


def launch(command: Sequence[str], log_path: Path, *, cwd: Path | None = None, banner: str | None = None,
           env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start `command` in its own session with stdout and stderr appended to `log_path`
    (after `banner`, a line marking this start in a log that outlives restarts)."""
    with open(log_path, "ab") as log:
        if banner is not None:
            log.write(f"{banner}\n".encode())
            log.flush()
        return subprocess.Popen(list(command), cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, env={**(env or os.environ), "PYTHONUNBUFFERED": "1"})


def log_tail(log_path: Path, lines: int = 60, since: int = 0) -> str:
    text = read_log(log_path, since).splitlines()
    head = f"--- last {min(lines, len(text))} lines of {log_path} ---"
    return "\n".join([head, *text[-lines:]])


def read_log(log_path: Path, since: int = 0) -> str:
    try:
        with open(log_path, "rb") as f:
            f.seek(since)
            return f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def listening_address(log_path: Path, since: int = 0) -> tuple[str, int] | None:
    """Where the broker logged that it listens, or None before it has."""
    match = _LISTENING.search(read_log(log_path, since))
    return (match.group(1), int(match.group(2))) if match else None


def ask_api_versions(host: str, port: int, timeout: float = 2.0) -> None:
    """Raise unless the broker at host:port answers ApiVersions (and serves Metadata)."""
    with KafkaClient(f"{host}:{port}", client_id="twinlog-testing", timeout_s=timeout) as client:
        client.version_for(_METADATA)


def wait_until_answering(proc: subprocess.Popen, address: tuple[str, int] | Callable[[], tuple[str, int] | None],
                         timeout: float, log_path: Path, *, since: int = 0, name: str = "twinlog",
                         probe: Callable[[str, int], None] = ask_api_versions) -> tuple[str, int]:
    """Poll `probe` until it passes; `address` is known, or a callable that returns None until
    it is. Raise BrokerStartError with the log's tail if the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    last_error: Exception | str = "the broker has not logged the address it listens on"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BrokerStartError(f"{name} exited with code {proc.returncode} during start-up\n"
                                   f"command: {' '.join(map(str, proc.args))}\n{log_tail(log_path, since=since)}")
        where = address() if callable(address) else address
        if where is not None:
            try:
                probe(*where)
                return where
            except (OSError, ClientError, ValueError) as exc:
                last_error = exc
        time.sleep(0.05)
    hint = "" if not callable(address) else " (the port is read from the INFO line 'twinlog listening on')"
    raise BrokerStartError(f"{name} did not answer ApiVersions within {timeout:g} s{hint}; "
                           f"last error: {last_error}\n{log_tail(log_path, since=since)}")


def terminate(proc: subprocess.Popen, grace: float) -> bool:
    """SIGTERM to the process group, SIGKILL after `grace` seconds; True if SIGTERM sufficed."""
    if proc.poll() is not None:
        return True
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(grace)
        return True
    except subprocess.TimeoutExpired:
        kill(proc)
        return False


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL: no shutdown hooks, no flush; what is on disk is what the OS has."""
    if proc.poll() is None:
        _signal_group(proc, signal.SIGKILL)
        proc.wait(10)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # the process leads its own session (launch)
    except ProcessLookupError:
        pass


class TwinlogBroker:
    """One `twinlog serve` process; a context manager that starts it and always stops it.

    `extra_args` are more `serve` flags (e.g. ["--num-partitions", "3"]); a --log-level above
    INFO hides the line the port is read from. The work dir (data/ and broker.log) is removed at
    stop unless `keep`. With a fixed `port` (a cluster member others must find again), `kill()`
    then `start()` brings the same broker back on its port with its data."""

    def __init__(self, storage_mode: str = "segment", extra_args: Sequence[str] = (), *, host: str = "127.0.0.1",
                 port: int = 0, start_timeout: float = 30.0, stop_timeout: float = 20.0, keep: bool = False) -> None:
        self.storage_mode = storage_mode
        self.extra_args = list(extra_args)
        self.host = host
        self._fixed_port = port
        self.port: int | None = port or None
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.keep = keep
        self.workdir = Path(tempfile.mkdtemp(prefix="twinlog-test-"))
        self.data_dir = self.workdir / "data"
        self.log_path = self.workdir / "broker.log"
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self.port is None:
            raise RuntimeError("the broker has not started")
        return f"{self.host}:{self.port}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "broker", "serve", "--host", self.host, "--port", str(self._fixed_port),
                "--data-dir", str(self.data_dir), "--storage-mode", self.storage_mode, *self.extra_args]

    def start(self) -> "TwinlogBroker":
        since = self.log_path.stat().st_size if self.log_path.exists() else 0  # a restart appends
        self.proc = launch(self.command(), self.log_path, cwd=self.workdir)
        try:
            _, self.port = wait_until_answering(self.proc, lambda: listening_address(self.log_path, since),
                                                self.start_timeout, self.log_path, since=since)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the broker (SIGTERM, SIGKILL after stop_timeout) and remove the work dir unless `keep`."""
        if self.proc is not None and not terminate(self.proc, self.stop_timeout):
            with open(self.log_path, "a") as log:
                log.write(f"twinlog ignored SIGTERM for {self.stop_timeout:g} s; killed it\n")
        if not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def kill(self) -> None:
        """SIGKILL, keeping the work dir: no flush, what is on disk is what the OS has."""
        if self.proc is not None:
            kill(self.proc)

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None,
                     replication_factor: int = -1, timeout: float = 30.0) -> None:
        create_topic(self.bootstrap_servers, name, partitions, configs, replication_factor, timeout)

    def log_text(self) -> str:
        return read_log(self.log_path)

    def log_tail(self, lines: int = 60) -> str:
        return log_tail(self.log_path, lines)

    def __enter__(self) -> "TwinlogBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (f"<TwinlogBroker {self.host}:{self.port} {self.storage_mode} "
                f"{'running' if self.is_running() else 'stopped'}>")


def create_topic(bootstrap_servers: str, name: str, partitions: int = 1, configs: dict[str, str] | None = None,
                 replication_factor: int = -1, timeout: float = 30.0) -> None:
    """CreateTopics, then wait until Metadata shows a leader for every partition."""
    with KafkaClient(bootstrap_servers, client_id="twinlog-testing", timeout_s=timeout) as client:
        answer = client.call(19, topics=[{
            "name": name, "num_partitions": partitions, "replication_factor": replication_factor,
            "assignments": [], "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
            timeout=int(timeout * 1000), validate_only=False)
        (topic,) = answer.topics
        if topic.error_code.value != 0:
            raise ClientError(f"cannot create topic {name!r}: {topic.error_code.name} {topic.error_message or ''}")
        deadline = time.monotonic() + timeout
        while not _all_led(client.metadata([name]), name, partitions):
            if time.monotonic() > deadline:
                raise ClientError(f"topic {name!r}: no leader for every partition within {timeout:g} s")
            time.sleep(0.05)


def _all_led(metadata, name: str, partitions: int) -> bool:
    (topic,) = [t for t in metadata.topics if t.name == name]
    led = [p for p in topic.partitions if p.error_code.value == 0 and p.leader_id >= 0]
    expected = partitions if partitions > 0 else len(topic.partitions)  # -1: the broker's num.partitions
    return topic.error_code.value == 0 and expected > 0 and len(led) == expected
