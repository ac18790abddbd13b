"""Where client quotas are kept on one broker: `<data-dir>/client_quotas.json`, read once at start.

Byte layout: UTF-8 JSON text, one object,

    {"version": 1,
     "entities": [{"entity": [["client-id", "app"], ["user", null]],   # pairs sorted by type;
                   "quotas": {"producer_byte_rate": 1048576.0}}, ...]} # null: the default entity

After a crash the file holds the quotas before or after the last change, never a mix: each
change that alters something replaces the whole file (temp file, fsync, rename, fsync of the
directory; segment.file_io.replace_file) before the request is answered, and only then do the
quota managers see it. Changes are serialized, so an older set is never renamed over a newer one.
A missing file is no quotas.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Callable, TypeVar

from segment.file_io import replace_file

from broker.quotas.entities import Entity, entity_of

FILE_NAME = "client_quotas.json"
FORMAT_VERSION = 1
Quotas = dict[Entity, dict[str, float]]
Outcome = TypeVar("Outcome")
Decide = Callable[[Quotas], tuple[Quotas, Outcome]]  # current quotas -> (the new ones, an outcome)


def to_entries(quotas: Quotas) -> tuple[dict, ...]:
    """The JSON form of the quotas (this file's "entities", etcd's client_quotas key)."""
    return tuple({"entity": [list(pair) for pair in entity], "quotas": dict(sorted(values.items()))}
                 for entity, values in sorted(quotas.items(), key=lambda kv: json.dumps(kv[0])))


def from_entries(entries) -> Quotas:
    return {entity_of(tuple(pair) for pair in e["entity"]): {k: float(v) for k, v in e["quotas"].items()}
            for e in entries}


def encode(quotas: Quotas) -> str:
    return json.dumps({"version": FORMAT_VERSION, "entities": list(to_entries(quotas))}, indent=1)


def decode(text: str) -> Quotas:
    doc = json.loads(text)
    if doc.get("version") != FORMAT_VERSION:
        raise ValueError(f"{FILE_NAME}: unknown version {doc.get('version')!r}")
    return from_entries(doc["entities"])


class QuotaStore:
    """One broker's quotas, in its data dir. `quotas()` is the same object until a change
    replaces it, so a reader (manager.py) sees a change by identity."""

    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / FILE_NAME
        self._quotas: Quotas = decode(self._path.read_text()) if self._path.exists() else {}
        self._write_lock = asyncio.Lock()

    def quotas(self) -> Quotas:
        return self._quotas

    async def alter(self, decide: Decide[Outcome], validate_only: bool) -> Outcome:
        """Runs `decide` on the current quotas and stores what it returns (unless validate_only);
        returns what decide returned besides (its first element is the new quotas)."""
        async with self._write_lock:
            wanted, outcome = decide(self._quotas)
            if validate_only or wanted == self._quotas:
                return outcome
            await asyncio.to_thread(replace_file, self._path, encode(wanted))  # fsyncs: off the event loop
            self._quotas = wanted
            return outcome
