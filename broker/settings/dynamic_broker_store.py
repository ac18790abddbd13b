"""Where dynamic broker configs are kept (AlterConfigs / IncrementalAlterConfigs of resource type
BROKER, checked by dynamic_broker_configs.py), per resource name: "" for the cluster default,
a broker id for that broker, as Kafka keys its ConfigRecords. Two ways behind one interface, as
group configs are (broker/groups/group_config_store.py):

- one broker: `<data-dir>/broker_configs.json`, read once at start,

      {"version": 1, "brokers": {"": {"log.cleaner.threads": "2"}, "0": {...}}}

  replaced whole (temp file, fsync, rename, fsync of the directory) before the request is
  answered, changes serialized so an older set is never renamed over a newer one;
- a cluster: one etcd key per resource, `<prefix>broker_configs/<name>` (etcd_layout.py), changed
  by compare-and-swap; reads come from this broker's MetadataImage, which the etcd watch keeps,
  so every broker sees the cluster default and its own.

Values are kept as the text they were given.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Callable

from segment.file_io import replace_file

FILE_NAME = "broker_configs.json"
Decide = Callable[[dict[str, str]], dict[str, str]]  # current configs -> new ones, or raises


class BrokerConfigStore:
    """One broker's, in its data dir."""

    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / FILE_NAME
        self._brokers: dict[str, dict[str, str]] = {}
        if self._path.exists():
            self._brokers = json.loads(self._path.read_text())["brokers"]
        self._write_lock = asyncio.Lock()

    def configs(self, name: str) -> dict[str, str]:
        return self._brokers.get(name, {})

    async def alter(self, name: str, decide: Decide, validate_only: bool) -> None:
        async with self._write_lock:
            wanted = decide(dict(self.configs(name)))
            if validate_only or wanted == self.configs(name):
                return
            brokers = {b: c for b, c in self._brokers.items() if b != name}
            if wanted:
                brokers[name] = wanted
            text = json.dumps({"version": 1, "brokers": brokers}, indent=1, sort_keys=True)
            await asyncio.to_thread(replace_file, self._path, text)  # fsyncs: off the event loop
            self._brokers = brokers


class ClusterBrokerConfigStore:
    """A cluster member's: etcd's, read through this broker's metadata image."""

    def __init__(self, metadata) -> None:
        self._metadata = metadata  # broker.cluster.ClusterMetadata

    def configs(self, name: str) -> dict[str, str]:
        record = self._metadata.image.broker_configs.get(name)
        return record.configs if record is not None else {}

    async def alter(self, name: str, decide: Decide, validate_only: bool) -> None:
        if validate_only:
            decide(dict(self.configs(name)))
            return
        await self._metadata.update_broker_configs(name, decide)
