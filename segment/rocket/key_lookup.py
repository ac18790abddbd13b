"""Lookup by record key: index candidates, each checked against what is really stored.

The index (index_file.py) only narrows the search: a hit is a commitlog offset
whose unit had some key with the same 31-bit hash, possibly from a unit that a
truncation, a torn-tail cut or retention has since removed. Each candidate is
therefore accepted only if
1. a valid MESSAGE unit (size, magic, CRC) of the topic starts at that offset,
2. its partition's consume queue still has an entry for exactly that unit
   (not truncated away, not re-written elsewhere after a crash), and
3. a record in its batch carries exactly the key and lies in
   [log start offset, log end offset) of the partition.
A compacted partition (log_cleaner.py) answers below the end C of its compacted
generation from that file only, through its own key index (compacted_log.py): a
commitlog unit below C may still exist, holding records the clean dropped, and is
never an answer. So a key reads as the records the log still holds, its latest
value last. Records come back in (partition, offset) order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bisect import bisect_left

from segment.log import StorageError
from wire import records as wire_records

from . import unit_format as uf

if TYPE_CHECKING:
    from .store import RocketLogStore


@dataclass(frozen=True, slots=True)
class KeyHit:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def _unit_at(store: RocketLogStore, phys: int) -> tuple[uf.UnitHeader, bytes] | None:
    f = store.commitlog.file_at(phys)
    if f is None or phys >= store.commitlog.write_pos:
        return None
    prefix = uf.peek_prefix(os.pread(f.fd, uf.PREFIX.size, phys - f.base), 0)
    if prefix is None or prefix[1] != uf.MESSAGE or prefix[0] > f.end - phys:
        return None
    buf = os.pread(f.fd, prefix[0], phys - f.base)
    header = uf.parse_unit(buf, 0, f.end - phys)
    return None if header is None else (header, buf)


def lookup_key(store: RocketLogStore, topic: str, key: bytes, partition: int | None = None) -> list[KeyHit]:
    if store.index is None:
        raise StorageError("this store was opened without a key index")
    hits: list[KeyHit] = []
    for phys, _store_time in store.index.lookup(topic, key):
        found = _unit_at(store, phys)
        if found is None:
            continue
        header, buf = found
        if header.topic != topic or (partition is not None and header.partition != partition):
            continue
        queue = store.queues.get((topic, header.partition))
        i = queue.find(header.base_offset) if queue is not None else None
        if i is None:
            continue
        entry = queue.entry(i)
        if entry.phys != phys or entry.base_offset != header.base_offset:
            continue
        low, high = store.log_start.get((topic, header.partition), 0), queue.end_offset
        generation = store.compacted.get((topic, header.partition))
        if generation is not None:
            low = max(low, generation.end)  # below it the compacted file answers
        try:
            records = list(wire_records.iter_records(memoryview(buf)[header.header_size :]))
        except wire_records.InvalidRecords:
            continue
        for r in records:
            if r.key == key and low <= r.offset < high:
                hits.append(KeyHit(topic, header.partition, r.offset, r.timestamp, r.key, r.value, r.headers))
    for (t, p), generation in list(store.compacted.items()):
        if t == topic and (partition is None or p == partition):
            hits += _compacted_hits(generation, topic, p, key, store.log_start.get((t, p), 0))
    hits.sort(key=lambda h: (h.partition, h.offset))
    return hits


def _compacted_hits(generation, topic: str, partition: int, key: bytes, log_start: int) -> list[KeyHit]:
    hits = []
    for position in set(generation.key_candidates(key)):
        i = bisect_left(generation.positions, position)
        if i >= len(generation) or generation.positions[i] != position:
            continue  # past the data after a truncation
        try:
            records = list(wire_records.iter_records(generation.read(generation.entry(i))))
        except wire_records.InvalidRecords:
            continue
        for r in records:
            if r.key == key and log_start <= r.offset < generation.end:
                hits.append(KeyHit(topic, partition, r.offset, r.timestamp, r.key, r.value, r.headers))
    return hits
