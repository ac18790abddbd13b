"""Producer id allocation that never hands out an id twice, across restarts and brokers.

Ids are reserved in blocks. One broker: `<data-dir>/producer-id-block` holds the first id
not yet reserved, written (fsync, rename) before any id of the block is used. A cluster
member takes its blocks from etcd instead (a compare-and-swap on one counter, as Kafka's
controller hands out ProducerIdsBlocks), so two brokers never give out the same id.
A crash loses at most the rest of a block, never repeats an id.

A member that cannot reach etcd, or a broker that cannot write its file (a full disk), gets no
block: `NoProducerIdBlock`, which InitProducerId
answers with Kafka's COORDINATOR_LOAD_IN_PROGRESS (its RPCProducerIdManager's answer while it
waits for a block, chosen because clients retry it), so the client retries instead of losing
its connection.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Awaitable, Callable

from wire.error_codes import ErrorCode

BLOCK_SIZE = 1000


class NoProducerIdBlock(Exception):
    """No fresh block could be reserved now (etcd out of reach, the file not written); a retry
    may succeed."""

    code = ErrorCode.coordinator_load_in_progress


class ProducerIdAllocator:
    def __init__(self, data_dir: Path, cluster_block: Callable[[int], Awaitable[int]] | None = None) -> None:
        """`cluster_block(size)`: the first id of a fresh block from etcd (cluster members)."""
        self._path = Path(data_dir) / "producer-id-block"
        self._cluster_block = cluster_block
        self._next = int(self._path.read_text()) if self._path.exists() and cluster_block is None else 0
        self._limit = self._next

    async def allocate(self) -> int:
        if self._next >= self._limit:
            if self._cluster_block is not None:
                self._next = await self._cluster_block(BLOCK_SIZE)
                self._limit = self._next + BLOCK_SIZE
            else:
                self._reserve(self._next + BLOCK_SIZE)
        pid = self._next
        self._next += 1
        return pid

    def _reserve(self, limit: int) -> None:
        """Raises NoProducerIdBlock when the file cannot be written (a full or failing disk):
        no id of the block is handed out, and the next InitProducerId tries again."""
        tmp = self._path.with_suffix(".tmp")
        try:
            with open(tmp, "w") as f:
                f.write(str(limit))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise NoProducerIdBlock(f"cannot reserve producer ids in {self._path}: {exc.strerror or exc}") from exc
        self._limit = limit
