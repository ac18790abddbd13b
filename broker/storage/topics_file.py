"""`<data-dir>/topics.json`: the topics this broker holds, and the layout of each of its replicas.

    {"version": 1,
     "topics": {"<name>": {"id": "<topic uuid>",
                           "storage_mode": "segment" | "commitlog",   (the topic's layout here)
                           "partition_modes": {"<index>": "<mode>"},  (only partitions moved to
                                                                       the other layout; optional)
                           "partitions": <count>,                     (one broker only)
                           "configs": {"<kafka name>": "<value>"}}}}  (one broker only)

A cluster member's topics, partition counts and configs live in etcd: its file keeps only the
id and layouts (broker/storage/replica_layouts.py). A file from before storage modes has no
`storage_mode`: every topic in it is in the segment layout.

Crash rule: the file is replaced whole (`write`): the new text goes to `topics.json.tmp`,
fsynced; the file it replaces is kept as `topics.json.bak` by a hard link made before the
rename, so `topics.json` names a whole file at every moment (renaming the old file away first
left a window in which a crash found no topics.json, and the next start took every partition
directory for an orphan); the rename over it is atomic and the directory is fsynced. After a
crash the file is either the old one or the new one.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from segment.file_io import replace_file

NAME = "topics.json"
VERSION = 1


@dataclass(frozen=True)
class SavedTopic:
    topic_id: uuid.UUID
    storage_mode: str
    moved: dict[int, str] = field(default_factory=dict)  # partitions in the other layout
    partitions: int = 0  # one broker only
    configs: dict[str, str] = field(default_factory=dict)  # one broker only


def read(data_dir: Path) -> dict[str, SavedTopic]:
    path = Path(data_dir) / NAME
    entries = json.loads(path.read_text()).get("topics", {}) if path.exists() else {}
    return {name: SavedTopic(uuid.UUID(e["id"]), e.get("storage_mode", "segment"),
                             {int(i): m for i, m in e.get("partition_modes", {}).items()},
                             e.get("partitions", 0), dict(e.get("configs", {})))
            for name, e in entries.items()}


def write(data_dir: Path, topics: dict[str, SavedTopic], cluster: bool) -> None:
    """Replace the file with `topics` (blocking file work: run it in the admin worker)."""
    data = {"version": VERSION, "topics": {
        name: {"id": str(t.topic_id), "storage_mode": t.storage_mode,
               **({} if cluster else {"partitions": t.partitions, "configs": t.configs}),
               **({"partition_modes": {str(i): m for i, m in sorted(t.moved.items())}} if t.moved else {})}
        for name, t in topics.items()}}
    path = Path(data_dir) / NAME
    if path.exists():
        backup = path.with_name(NAME + ".bak")
        backup.unlink(missing_ok=True)
        os.link(path, backup)
    replace_file(path, json.dumps(data, indent=1, sort_keys=True))
