"""How the tests start a JVM: `java_command(classpath, heap_mb)` is the one place for the flags.

The tests start many short-lived JVMs on a machine of two cores, so the flags buy CPU, not
throughput:
- -XX:+UseSerialGC: one GC thread; the small heaps here need no parallel collector.
- -XX:TieredStopAtLevel=1: C1 only; a JVM that lives seconds never earns back C2's compile time.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


class JavaSetupError(RuntimeError):
    """The JDK, the jars or the compile step is missing or broken: a harness problem."""


def java() -> str:
    path = shutil.which("java")
    if not path:
        raise JavaSetupError("java not found: the Java tests need a JDK 17")
    return path


def java_command(classpath: list[Path], heap_mb: int) -> list[str]:
    """`java`, the flags and the classpath: append the main class and its arguments."""
    return [java(), *JVM_FLAGS, f"-Xmx{heap_mb}m", "-cp", os.pathsep.join(map(str, classpath))]
