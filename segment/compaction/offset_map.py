"""Key → offset of its latest record, over the dirty part of a log being compacted.

Kafka's SkimpyOffsetMap keeps a 16-byte MD5 of each key in a fixed buffer
(log.cleaner.dedupe.buffer.size) and accepts the rare hash collision. Here the keys
themselves are kept in a dict, so no two keys can ever be confused, and the buffer size
bounds what the dict is estimated to cost: each entry is charged its key's length plus
ENTRY_OVERHEAD_BYTES (a CPython dict slot, the key's bytes object and the offset's int).

A batch is added whole or not at all: when its new keys would pass the bound, add_batch
answers False and leaves the map as it was. The cleaner then cleans only up to
`covered_end` (the offset after the last batch added), as Kafka's cleaner stops at the
last offset its full map covers, and the rest waits for the next round.
"""

from __future__ import annotations

from collections.abc import Callable

from wire import records as wire_records
from wire.record_batch import parse_header

# sys.getsizeof of a bytes object (33 + len) and an int above 256 (28), plus a dict entry
# at CPython's 2/3 load factor (~40): measured 96-104 bytes per entry, charged 100.
ENTRY_OVERHEAD_BYTES = 100
DEFAULT_MEMORY_BYTES = 128 * 1024 * 1024  # Kafka's log.cleaner.dedupe.buffer.size


class OffsetMap:
    def __init__(self, memory_bytes: int = DEFAULT_MEMORY_BYTES) -> None:
        if memory_bytes < ENTRY_OVERHEAD_BYTES:
            raise ValueError(f"an offset map of {memory_bytes} bytes cannot hold one key")
        self.memory_bytes = memory_bytes
        self.used_bytes = 0
        self.covered_end: int | None = None  # offset after the last batch added; None before any
        self._latest: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._latest)

    def latest(self, key: bytes) -> int | None:
        return self._latest.get(key)

    def add_batch(self, batch, tick: Callable[[], None] = lambda: None, keys: bool = True) -> bool:
        """Record the offsets of the batch's keyed records; False (and nothing recorded) when
        its new keys do not fit. Control batches hold no keys to record, nor does a batch whose
        `keys` supersede nothing (an aborted transaction's): the map only covers it. Raises
        InvalidRecords for records that cannot be read (decompression is bounded as for every
        reader). tick() is called before each record (gil_slicer.py: a batch may hold thousands)."""
        header = parse_header(batch)
        pairs: list[tuple[bytes, int]] = []
        if keys and not header.is_control and header.record_count:
            for r in wire_records.iter_records(batch):
                tick()
                if r.key is not None:
                    pairs.append((r.key, r.offset))
        latest = self._latest
        new_keys = {key for key, _ in pairs if key not in latest}
        cost = sum(len(key) + ENTRY_OVERHEAD_BYTES for key in new_keys)
        if self.used_bytes + cost > self.memory_bytes:
            return False
        for key, offset in pairs:
            latest[key] = offset  # records are in offset order: the last one wins
        self.used_bytes += cost
        self.covered_end = header.last_offset + 1
        return True
