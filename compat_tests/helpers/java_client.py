"""Drives compat_tests/java/ClientCheck.java, the real Apache Kafka Java client, from pytest.

`JavaClient(bootstrap)` compiles the Java sources once per source/jar content (into
.deps/java-build/<hash>/checks.jar, reused across runs) and starts one JVM that serves
JSON-line requests until closed; `call(op, **args)` sends one request and returns its result,
or raises `JavaOpError` with the Java exception's class and message. Bytes go over the wire as
base64: `b64()` / `unb64()` here.

Classpath: the three jars install_deps.sh puts in .deps/java/ (kafka-clients 4.3.0,
commons-pool2, slf4j-api; slf4j without a binding prints one warning and logs nothing), plus,
when `compression_jars=True`, the codec jars from .deps/java/compression/ (lz4-java,
snappy-java, zstd-jni), then checks.jar, the compiled java/ sources. Only gzip is built into
the JDK; the others are separate libraries. `check_command` is the command line of any check
program of java/, with the flags and class data sharing archive of helpers/jvm.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from compat_tests.helpers.jvm import JavaSetupError, java_command

HERE = Path(__file__).resolve().parents[1]  # compat_tests/: java/ and .deps/
JAVA_SRC = HERE / "java"
JAR_DIR = HERE / ".deps" / "java"
COMPRESSION_JAR_DIR = JAR_DIR / "compression"
BUILD_DIR = HERE / ".deps" / "java-build"
REQUIRED_JARS = ("kafka-clients-4.3.0.jar", "commons-pool2-2.12.1.jar", "slf4j-api-2.0.18.jar")
COMPRESSION_JARS = ("lz4-java-1.10.2.jar", "snappy-java-1.1.1.7.jar", "zstd-jni-1.5.6-10.jar")
CHECKS_JAR = "checks.jar"  # a jar, not a directory: class data sharing archives classes from jars only
WARM_UP_CLASS = "WarmUp"  # java/WarmUp.java: the training run of the class data sharing archive
DEFAULT_HEAP_MB = 512
DEFAULT_OP_TIMEOUT_S = 90.0


class JavaOpError(AssertionError):
    """The Java client threw: `error_class` is the Java exception's class name."""

    def __init__(self, op: str, error_class: str, message: str, trace: str):
        super().__init__(f"Java {op} failed: {error_class}: {message}\n{trace}")
        self.op = op
        self.error_class = error_class
        self.message = message
        self.trace = trace


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def classpath_jars(compression_jars: bool = False) -> list[Path]:
    jars = [JAR_DIR / j for j in REQUIRED_JARS]
    if compression_jars:
        jars += [COMPRESSION_JAR_DIR / j for j in COMPRESSION_JARS]
    missing = [str(j) for j in jars if not j.is_file()]
    if missing:
        raise JavaSetupError(f"missing jars {missing}: run `bash compat_tests/install_deps.sh`")
    return jars


def _jdk_tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        raise JavaSetupError(f"{name} not found: the Java client tests need a JDK 17 (javac, jar, java)")
    return path


def compiled_checks() -> Path:
    """javac the java/ sources into checks.jar once per (sources, jars, javac, jar) content."""
    javac, jar = _jdk_tool("javac"), _jdk_tool("jar")
    sources = sorted(JAVA_SRC.glob("*.java"))
    digest = hashlib.sha256()
    for path in sources + classpath_jars():
        digest.update(path.name.encode())
        digest.update(path.read_bytes() if path.suffix == ".java" else str(path.stat().st_size).encode())
    digest.update(os.path.realpath(javac).encode())
    digest.update(os.path.realpath(jar).encode())
    out = BUILD_DIR / digest.hexdigest()[:16]
    if (out / CHECKS_JAR).is_file():
        return out / CHECKS_JAR
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=BUILD_DIR, prefix="tmp-"))
    cp = os.pathsep.join(str(j) for j in classpath_jars())
    for step in ([javac, "-nowarn", "-d", str(tmp / "classes"), "-cp", cp, *map(str, sources)],
                 [jar, "--create", "--file", str(tmp / CHECKS_JAR), "-C", str(tmp / "classes"), "."]):
        result = subprocess.run(step, capture_output=True, text=True, timeout=180)
        if result.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise JavaSetupError(f"{step[0]} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    shutil.rmtree(tmp / "classes")
    try:
        tmp.rename(out)
    except OSError:  # another run compiled the same sources first
        shutil.rmtree(tmp, ignore_errors=True)
    return out / CHECKS_JAR


def check_command(main_class: str, *args: str, compression_jars: bool = False, extra_jars: tuple[str, ...] = (),
                  heap_mb: int = DEFAULT_HEAP_MB, jvm_options: tuple[str, ...] = ()) -> list[str]:
    """The command line running `main_class` of java/ with `args`; `extra_jars` go on the
    classpath before checks.jar, `jvm_options` (-D...) before the main class."""
    classpath = [*classpath_jars(compression_jars), *map(Path, extra_jars), compiled_checks()]
    return [*java_command(classpath, heap_mb, trained_by=WARM_UP_CLASS), *jvm_options, main_class, *args]


class JavaClient:
    """One ClientCheck JVM; use as a context manager or call close(). A subclass names another
    class of java/ serving the same protocol in `main_class`, and in `main_args` what it takes
    before the bootstrap."""

    main_class = "ClientCheck"
    main_args: tuple[str, ...] = ()

    def __init__(self, bootstrap: str, compression_jars: bool = False, log_dir: Path | None = None):
        self._command = check_command(self.main_class, *self.main_args, bootstrap, compression_jars=compression_jars)
        log_dir = Path(log_dir or tempfile.mkdtemp(prefix="clientcheck-"))
        self.stderr_path = log_dir / "clientcheck-stderr.txt"
        self._stderr = open(self.stderr_path, "ab")
        self._next_id = 0
        self._start()

    def _start(self) -> None:
        self._proc = subprocess.Popen(self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr)
        self._replies: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read_replies, daemon=True)
        self._reader.start()

    def _read_replies(self) -> None:
        for line in self._proc.stdout:
            self._replies.put(line)
        self._replies.put(None)

    def stderr_tail(self, lines: int = 30) -> str:
        self._stderr.flush()
        text = self.stderr_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def raw_call(self, op: str, timeout: float = DEFAULT_OP_TIMEOUT_S, **args) -> dict:
        """Send one request; return the whole reply dict (ok / result / errorClass ...)."""
        if self._proc.poll() is not None:
            # Killed after an earlier op timed out: that op failed; later ones get a fresh JVM.
            self._stderr.write(f"\n=== restarting ClientCheck (previous JVM exit code {self._proc.returncode})\n".encode())
            self._start()
        self._next_id += 1
        request = {"id": self._next_id, "op": op, **args}
        self._proc.stdin.write((json.dumps(request) + "\n").encode())
        self._proc.stdin.flush()
        try:
            line = self._replies.get(timeout=timeout)
        except queue.Empty:
            self._stop(kill=True)
            raise AssertionError(f"Java {op} gave no reply within {timeout}s (JVM killed)\n{self.stderr_tail()}")
        if line is None:
            raise JavaSetupError(f"ClientCheck JVM closed its output during {op}:\n{self.stderr_tail()}")
        reply = json.loads(line)
        if reply.get("id") not in (None, self._next_id):
            raise JavaSetupError(f"reply id {reply.get('id')} for request {self._next_id}")
        return reply

    def call(self, op: str, timeout: float = DEFAULT_OP_TIMEOUT_S, **args):
        reply = self.raw_call(op, timeout=timeout, **args)
        if not reply["ok"]:
            raise JavaOpError(op, reply["errorClass"], reply["error"], reply.get("trace", ""))
        return reply["result"]

    def close(self, kill: bool = False) -> None:
        self._stop(kill)
        self._stderr.close()

    def _stop(self, kill: bool = False) -> None:
        if self._proc.poll() is None:
            if not kill:
                try:
                    self._proc.stdin.close()
                    self._proc.wait(15)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait(10)

    def __enter__(self) -> "JavaClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
