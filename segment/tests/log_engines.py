"""Both engines behind one helper for the contract tests: open, crash, reopen, read back.

A crash is a copy of the data directory taken while the store is open (no clean-shutdown
marker, abort file present), after the store wrote what the last request appended, as the
broker does after each request.
"""

from __future__ import annotations

import itertools
import resource
import shutil
import signal
from contextlib import contextmanager
from pathlib import Path

from segment.tests.segment_batches import make_batch

from segment.kafka.store import SegmentLogStore
from segment.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT
from segment.log import LogConfig
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config
from wire.record_batch import iter_batches

ENGINES = ("segment", "commitlog")
CFG = log_config(segment_bytes=1024, index_interval_bytes=256)
ROCKET = dict(commitlog_file_size=4096, queue_entries_per_file=8, index_slots=64, index_entries=400)


class Engine:
    """One engine's store under a directory that a crash moves to a copy."""

    def __init__(self, kind: str, root: Path, name: str = "data") -> None:
        self.kind, self.root, self.path = kind, root, root / name
        self._crashes = itertools.count()
        self.store = self._open()

    def _open(self):
        return SegmentLogStore(self.path) if self.kind == "segment" else RocketLogStore(self.path, **ROCKET)

    def log(self, config: LogConfig = CFG):
        return self.store.open_partition("t", 0, config)

    def noise(self) -> None:
        """A batch of another partition: in the commitlog it lands between this partition's."""
        self.store.open_partition("noise", 0, CFG).append(make_batch(1, value_size=5), 0, 1_000)

    def request_done(self) -> None:
        self.store.commit_writes()

    def reopen(self, clean: bool, config: LogConfig = CFG):
        if clean:
            self.store.close()
        else:
            self.store.commit_writes()
            crashed = self.root / f"crash{next(self._crashes)}"
            shutil.copytree(self.path, crashed)
            self.store.close()
            self.path = crashed
        self.store = self._open()
        return self.log(config)

    @property
    def epoch_file(self) -> Path:
        if self.kind == "segment":
            return self.path / "t-0" / LEADER_EPOCH_CHECKPOINT
        return self.path / "commitlog-store" / "consumequeue" / "t" / "0" / LEADER_EPOCH_CHECKPOINT


def lead(engine: Engine, plog, plan) -> list[int]:
    """Leader appends: plan = [(leader epoch, records), ...]; returns each batch's base offset."""
    bases = []
    for epoch, n in plan:
        bases.append(plog.append(make_batch(n, value_size=30), epoch, 5_000).first_offset)
        engine.noise()
        engine.request_done()
    return bases


def stored(plog) -> list[bytes]:
    """Every batch from the log start, as the bytes a fetch would send."""
    data = b"".join(plog.read_bytes(r) for r in plog.read(plog.log_start_offset, 1 << 30, plog.log_end_offset))
    return [data[pos : pos + h.size] for pos, h in iter_batches(data)]


def epochs_on_disk(engine: Engine, flushed: bool = True) -> list[tuple[int, int]]:
    """The epoch file's entries; `flushed`: as the logs' next flush leaves it (an append only
    changes the cache, leader_epoch_cache.py); no file is an empty cache that was never written."""
    if flushed:
        for plog in list(engine.store.logs.values()):
            plog.epochs.write_if_changed()
    if not engine.epoch_file.exists():
        return []
    lines = engine.epoch_file.read_text().split("\n")
    assert lines[0] == "0" and len(lines) == int(lines[1]) + 3 and lines[-1] == ""
    return [tuple(int(x) for x in line.split()) for line in lines[2:-1]]


def first_of_each_epoch(batches: list[tuple[int, int]], log_start: int) -> list[tuple[int, int]]:
    """The epoch cache a log of (base offset, epoch) batches calls for."""
    out: list[tuple[int, int]] = []
    for base, epoch in batches:
        if not out or epoch > out[-1][0]:
            out.append((epoch, max(base, log_start)))
    return out


@contextmanager
def file_size_limit(limit: int):
    """RLIMIT_FSIZE: no file of this process may grow past `limit` bytes; a write or fallocate
    that would fails with EFBIG (SIGXFSZ ignored), a real failure the engines refuse as for
    a full disk."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


def crash_tearing(engine: Engine, plog, base: int, torn_bytes: int = 7):
    """Crash, then reopen a copy of the store in which this partition's batch at `base` is torn
    and nothing written after it survives."""
    engine.store.commit_writes()
    if engine.kind == "commitlog":
        phys = next(e.phys for e in plog.queue.entries_from(0) if e.base_offset == base)
    crashed = engine.root / "torn"
    shutil.copytree(engine.path, crashed)
    engine.store.close()
    engine.path = crashed
    if engine.kind == "segment":
        files = sorted((crashed / "t-0").glob("*.log"))
        hit = [(f, pos) for f in files for pos, h in iter_batches(f.read_bytes()) if h.base_offset == base]
        f, pos = hit[0]
        f.write_bytes(f.read_bytes()[: pos + torn_bytes])
        for later in files[files.index(f) + 1 :]:
            later.unlink()
    else:
        for f in sorted((crashed / "commitlog-store" / "commitlog").iterdir()):
            first = int(f.name)
            if first > phys:
                f.unlink()
            elif phys < first + f.stat().st_size:
                f.write_bytes(f.read_bytes()[: phys - first + torn_bytes])
    engine.store = engine._open()
    return engine.log()
