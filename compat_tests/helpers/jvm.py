"""How the tests start a JVM: `java_command(classpath, heap_mb)` is the one place for the flags.

The tests start many short-lived JVMs on a machine of two cores, so the flags buy CPU, not
throughput:
- -XX:+UseSerialGC: one GC thread; the small heaps here need no parallel collector.
- -XX:TieredStopAtLevel=1: C1 only; a JVM that lives seconds never earns back C2's compile time.
- -Xlog: the JVM's own warnings go to stderr, never into stdout, which carries the JSON lines.

Class data sharing (JEP 350): when `trained_by` names a main class (WarmUp for the checks of
compat_tests/java/), the first command line built for a classpath runs it once with
-XX:ArchiveClassesAtExit, and every JVM of that classpath maps the archived classes
(-XX:SharedArchiveFile) instead of loading, parsing and verifying them from the jars again:
about half the CPU of a one-shot Admin check (measured in the commit that added this). The
archive is named by a digest of the classpath, the jars' sizes and mtimes and the java binary,
so a changed jar set or JDK gets a new one. It is written under a temporary name, mapped once
(a truncated archive crashes the JVM that maps it) and renamed, all under a file lock, so
concurrent xdist workers neither corrupt it nor build it twice. A missing or stale archive
only costs the sharing: -Xshare:auto (the default) runs the JVM without it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from compat_tests.helpers.broker_process import DEPS

JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xlog:disable", "-Xlog:all=warning:stderr")
ARCHIVE_DIR = DEPS / "jvm-cds"
# where the training run's clients connect: port 1 on loopback, where nothing listens
UNREACHABLE_BOOTSTRAP = "127.0.0.1:1"
TRAINING_TIMEOUT_S = 120

_archives: dict[str, Path | None] = {}


class JavaSetupError(RuntimeError):
    """The JDK, the jars or the compile step is missing or broken: a harness problem."""


def java() -> str:
    path = shutil.which("java")
    if not path:
        raise JavaSetupError("java not found: the Java tests need a JDK 17")
    return path


def java_command(classpath: list[Path], heap_mb: int, trained_by: str | None = None) -> list[str]:
    """`java`, the flags and the classpath: append the main class and its arguments."""
    cp = os.pathsep.join(map(str, classpath))
    archive = shared_archive(cp, trained_by) if trained_by else None
    sharing = [f"-XX:SharedArchiveFile={archive}"] if archive else []
    return [java(), *JVM_FLAGS, f"-Xmx{heap_mb}m", *sharing, "-cp", cp]


def shared_archive(cp: str, trained_by: str) -> Path | None:
    """The class data sharing archive for `cp`, built by running `trained_by` once; None if the
    training run failed (what went wrong is kept beside the archive's name, as .log)."""
    if cp not in _archives:
        _archives[cp] = _build_archive(cp, trained_by)
    return _archives[cp]


def archive_path(cp: str, trained_by: str) -> Path:
    """Where the archive of `cp` lives: named by everything a JVM checks before it maps one."""
    binary = os.path.realpath(java())
    digest = hashlib.sha256(f"{binary}\0{os.stat(binary).st_mtime_ns}\0{trained_by}\0".encode())
    for entry in cp.split(os.pathsep):
        stat = os.stat(entry)
        digest.update(f"{entry}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return ARCHIVE_DIR / f"{digest.hexdigest()[:16]}.jsa"


def _build_archive(cp: str, trained_by: str) -> Path | None:
    archive = archive_path(cp, trained_by)
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    with open(archive.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be training this classpath now
        if archive.is_file():
            return archive
        partial = archive.with_name(f"{archive.stem}.{os.getpid()}.partial")
        failure = _train(cp, trained_by, partial)
        if failure:
            archive.with_suffix(".log").write_text(failure)
            partial.unlink(missing_ok=True)
            return None
        os.replace(partial, archive)
    return archive


def _train(cp: str, trained_by: str, partial: Path) -> str | None:
    """Run `trained_by` dumping its classes to `partial`, then check that the archive maps and
    its checksum holds (a truncated archive crashes the JVM that maps it); None when it does,
    else what went wrong. Both run in the archive's directory, where a JVM crash log lands."""
    steps = ([java(), *JVM_FLAGS, f"-XX:ArchiveClassesAtExit={partial}", "-cp", cp, trained_by,
              UNREACHABLE_BOOTSTRAP],
             [java(), *JVM_FLAGS, "-Xshare:on", "-XX:+VerifySharedSpaces", f"-XX:SharedArchiveFile={partial}",
              "-cp", cp, "-version"])
    for command in steps:
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=TRAINING_TIMEOUT_S,
                                 cwd=partial.parent)
        except subprocess.TimeoutExpired as e:
            return f"{' '.join(command)}\nno exit within {TRAINING_TIMEOUT_S}s\n{e.stdout}\n{e.stderr}"
        if run.returncode != 0 or not partial.is_file():
            return f"{' '.join(command)}\nexit {run.returncode}\n{run.stdout}\n{run.stderr}"
    return None
