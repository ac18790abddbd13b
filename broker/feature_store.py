"""Where the finalized feature levels are kept (UpdateFeatures, broker/features.py checks it),
two ways behind one interface, as dynamic broker configs are:

- one broker: `<data-dir>/features.json`, read once at start,

      {"version": 1, "levels": {"transaction.version": 2, "group.version": 1, ...}, "epoch": 1780000000000}

  replaced whole (temp file, fsync, rename, fsync of the directory) before the request is
  answered; absent until the first UpdateFeatures, when the bootstrap levels hold;
- a cluster: the etcd key `<prefix>features` (etcd_layout.py), changed by compare-and-swap, read
  from this broker's MetadataImage, so every broker's ApiVersions shows a change once its watch
  delivers it, the answering broker's before it answers.

An update's epoch is above every epoch before it: the time it was made (ms), or one more than
the last epoch should the clock be behind it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Callable

from replica.partition import now_ms
from segment.file_io import replace_file

from broker.cluster.etcd_layout import FinalizedFeatures
from broker.features import Features, advertised

FILE_NAME = "features.json"
Decide = Callable[[dict[str, int]], dict[str, int]]  # current levels -> new ones, or raises


def _next_epoch(last: int) -> int:
    return max(now_ms(), last + 1)


class FeatureStore:
    """One broker's, in its data dir; `bootstrap`: the levels before any UpdateFeatures."""

    def __init__(self, data_dir: Path, bootstrap: dict[str, int]) -> None:
        self._path = Path(data_dir) / FILE_NAME
        self._levels, self._epoch = dict(bootstrap), now_ms()
        if self._path.exists():
            stored = json.loads(self._path.read_text())
            self._levels, self._epoch = {**bootstrap, **stored["levels"]}, stored["epoch"]
        self._write_lock = asyncio.Lock()

    def features(self) -> Features:
        return advertised(self._levels, self._epoch)

    def level(self, name: str) -> int:
        return self._levels.get(name, 0)

    async def update(self, decide: Decide, validate_only: bool) -> None:
        async with self._write_lock:
            wanted = decide(dict(self._levels))
            if validate_only:
                return
            epoch = _next_epoch(self._epoch)
            text = json.dumps({"version": 1, "levels": wanted, "epoch": epoch}, indent=1, sort_keys=True)
            await asyncio.to_thread(replace_file, self._path, text)  # fsyncs: off the event loop
            self._levels, self._epoch = wanted, epoch


class ClusterFeatureStore:
    """A cluster member's: etcd's, read through this broker's metadata image."""

    def __init__(self, metadata, bootstrap: dict[str, int]) -> None:
        self._metadata = metadata  # broker.cluster.ClusterMetadata
        self._bootstrap = dict(bootstrap)
        self._started = now_ms()

    def _current(self) -> tuple[dict[str, int], int]:
        record = self._metadata.image.features
        if record is None:
            return self._bootstrap, self._started
        return {**self._bootstrap, **record.levels}, record.epoch

    def features(self) -> Features:
        return advertised(*self._current())

    def level(self, name: str) -> int:
        return self._current()[0].get(name, 0)

    async def update(self, decide: Decide, validate_only: bool) -> None:
        if validate_only:
            decide(dict(self._current()[0]))
            return

        def record(current):
            levels = {**self._bootstrap, **(current.levels if current is not None else {})}
            last = current.epoch if current is not None else self._started
            return FinalizedFeatures(decide(levels), _next_epoch(last))

        await self._metadata.update_features(record)
