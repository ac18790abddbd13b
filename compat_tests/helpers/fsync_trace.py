"""fsyncs a running broker completes, as strace sees them: what a test can observe of
durability without pulling the power. It proves the broker asks for an fsync in time, not that
the disk honours it (a drive's volatile cache, a VM's).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

# "<pid> <epoch s> fsync(<fd></path>) = 0 <duration>", or split in two lines when another
# traced thread makes a call meanwhile: "... fsync(<fd></path> <unfinished ...>", then
# "<pid> <epoch s> <... fsync resumed>) = 0 <duration>" printed when it returns.
_WHOLE = re.compile(r"^(\d+) +([\d.]+) f(?:data)?sync\(\d+<(.*?)>\) += 0 <([\d.]+)>")
_STARTED = re.compile(r"^(\d+) +[\d.]+ f(?:data)?sync\(\d+<(.*?)> <unfinished \.\.\.>")
_RESUMED = re.compile(r"^(\d+) +([\d.]+) <\.\.\. f(?:data)?sync resumed>\) += 0 <[\d.]+>")


@dataclass(frozen=True)
class Fsync:
    path: str
    done_at: float  # wall clock, seconds


def completed_fsyncs(trace: str) -> list[Fsync]:
    out, pending = [], {}
    for line in trace.splitlines():
        if m := _WHOLE.match(line):
            out.append(Fsync(m[3], float(m[2]) + float(m[4])))
        elif m := _STARTED.match(line):
            pending[m[1]] = m[2]
        elif (m := _RESUMED.match(line)) and m[1] in pending:
            out.append(Fsync(pending.pop(m[1]), float(m[2])))
    return out


class FsyncTrace:
    """strace -f on one running broker, fsync and fdatasync only, until stopped."""

    def __init__(self, pid: int, out: Path) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            ["strace", "-f", "-ttt", "-T", "-y", "-e", "trace=fsync,fdatasync", "-o", str(out), "-p", str(pid)],
            stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()  # "strace: Process N attached" once it traces
        assert "attached" in line, f"strace could not attach to {pid}: {line}"

    def stop(self) -> list[Fsync]:
        self.proc.terminate()  # strace detaches and leaves the broker running
        self.proc.wait(10)
        return completed_fsyncs(self.out.read_text())
