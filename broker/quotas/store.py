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
from typing import Callable

from segment.file_io import replace_file

from broker.quotas.entities import Entity, entity_of

FILE_NAME = "client_quotas.json"
FORMAT_VERSION = 1
Quotas = dict[Entity, dict[str, float]]
Decide = Callable[[Quotas], tuple[Quotas, object]]  # current quotas -> (the new ones, an outcome)


def encode(quotas: Quotas) -> str:
    entities = [{"entity": [list(pair) for pair in entity], "quotas": dict(sorted(values.items()))}
                for entity, values in sorted(quotas.items(), key=lambda kv: json.dumps(kv[0]))]
    return json.dumps({"version": FORMAT_VERSION, "entities": entities}, indent=1)


def decode(text: str) -> Quotas:
    doc = json.loads(text)
    if doc.get("version") != FORMAT_VERSION:
        raise ValueError(f"{FILE_NAME}: unknown version {doc.get('version')!r}")
    return {entity_of(tuple(pair) for pair in e["entity"]): {k: float(v) for k, v in e["quotas"].items()}
            for e in doc["entities"]}


class QuotaStore:
    """One broker's quotas, in its data dir. `listeners` are called with the quotas after each change."""

    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / FILE_NAME
        self._quotas: Quotas = decode(self._path.read_text()) if self._path.exists() else {}
        self._write_lock = asyncio.Lock()
        self._listeners: list[Callable[[Quotas], None]] = []

    def quotas(self) -> Quotas:
        return self._quotas

    def add_listener(self, listener: Callable[[Quotas], None]) -> None:
        self._listeners.append(listener)
        listener(self._quotas)

    async def alter(self, decide: Decide, validate_only: bool):
        """Runs `decide` on the current quotas and stores what it returns (unless validate_only);
        returns what decide returned besides (its first element is the new quotas)."""
        async with self._write_lock:
            wanted, outcome = decide(self._quotas)
            if validate_only or wanted == self._quotas:
                return outcome
            await asyncio.to_thread(replace_file, self._path, encode(wanted))  # fsyncs: off the event loop
            self._quotas = wanted
            for listener in self._listeners:
                listener(wanted)
            return outcome
