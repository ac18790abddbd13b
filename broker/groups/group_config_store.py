"""Where groups' config overrides are kept (IncrementalAlterConfigs of resource type GROUP;
broker/settings/group_configs.py checks them), two ways behind one interface, as ACLs are:

- one broker: `<data-dir>/group_configs.json`, read once at start,

      {"version": 1, "groups": {"<group id>": {"share.isolation.level": "read_committed", ...}}}

  replaced whole by each change that alters something (temp file, fsync, rename, fsync of the
  directory: after a crash it holds the overrides before or after that request, never a mix)
  before the request is answered, and only then read by share-partitions; changes are
  serialized so an older set is never renamed over a newer one;
- a cluster: one etcd key per group, `<prefix>group_configs/<group>` (etcd_layout.py), changed
  by compare-and-swap; reads come from this broker's MetadataImage (the etcd watch keeps it), so
  the broker leading a share-partition applies a change its watch delivers, and the answering
  broker before it answers.

Overrides are kept as the text they were given, as topic configs are.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Callable

from segment.file_io import replace_file

FILE_NAME = "group_configs.json"
Decide = Callable[[dict[str, str]], dict[str, str]]  # current overrides -> new ones, or raises


class GroupConfigStore:
    """One broker's, in its data dir."""

    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / FILE_NAME
        self._groups: dict[str, dict[str, str]] = {}
        if self._path.exists():
            self._groups = json.loads(self._path.read_text())["groups"]
        self._write_lock = asyncio.Lock()

    def configs(self, group: str) -> dict[str, str]:
        return self._groups.get(group, {})

    def groups(self) -> list[str]:
        """The groups that set any config, by name."""
        return sorted(self._groups)

    async def alter(self, group: str, decide: Decide, validate_only: bool) -> None:
        async with self._write_lock:
            wanted = decide(dict(self.configs(group)))
            if validate_only or wanted == self.configs(group):
                return
            groups = {g: c for g, c in self._groups.items() if g != group}
            if wanted:
                groups[group] = wanted
            text = json.dumps({"version": 1, "groups": groups}, indent=1, sort_keys=True)
            await asyncio.to_thread(replace_file, self._path, text)  # fsyncs: off the event loop
            self._groups = groups


class ClusterGroupConfigStore:
    """A cluster member's: etcd's, read through this broker's metadata image."""

    def __init__(self, metadata) -> None:
        self._metadata = metadata  # broker.cluster.ClusterMetadata

    def configs(self, group: str) -> dict[str, str]:
        record = self._metadata.image.group_configs.get(group)
        return record.configs if record is not None else {}

    def groups(self) -> list[str]:
        return sorted(self._metadata.image.group_configs)

    async def alter(self, group: str, decide: Decide, validate_only: bool) -> None:
        if validate_only:
            decide(dict(self.configs(group)))
            return
        await self._metadata.update_group_configs(group, decide)
