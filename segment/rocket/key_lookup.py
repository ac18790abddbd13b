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
Records come back in (partition, offset) order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
        try:
            records = list(wire_records.iter_records(memoryview(buf)[header.header_size :]))
        except wire_records.InvalidRecords:
            continue
        for r in records:
            if r.key == key and low <= r.offset < high:
                hits.append(KeyHit(topic, header.partition, r.offset, r.timestamp, r.key, r.value, r.headers))
    hits.sort(key=lambda h: (h.partition, h.offset))
    return hits
