"""Producer id allocation that never hands out an id twice, across restarts.

Ids are reserved in blocks: `<data-dir>/producer-id-block` holds the first id
not yet reserved, written (fsync, rename) before any id of the block is used.
A crash loses at most the rest of a block, never repeats an id.
"""

from __future__ import annotations

import os
from pathlib import Path

BLOCK_SIZE = 1000


class ProducerIdAllocator:
    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / "producer-id-block"
        self._next = int(self._path.read_text()) if self._path.exists() else 0
        self._limit = self._next

    def allocate(self) -> int:
        if self._next >= self._limit:
            self._reserve(self._next + BLOCK_SIZE)
        pid = self._next
        self._next += 1
        return pid

    def _reserve(self, limit: int) -> None:
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write(str(limit))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path)
        self._limit = limit
