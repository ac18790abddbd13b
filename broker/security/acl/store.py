"""Where one broker keeps its ACLs: `<data-dir>/acls.json`, read once at start.

    {"version": 1, "acls": [{"resource_type": "TOPIC", "resource_name": "a.", "pattern_type": "PREFIXED",
                             "principal": "User:alice", "host": "*", "operation": "WRITE",
                             "permission": "ALLOW"}, ...]}

Each CreateAcls / DeleteAcls that changes something replaces the file whole (temp file, fsync,
rename, fsync of the directory: after a crash it holds the ACLs before or after that request,
never a mix) before it answers, and only then does the authorizer see the change. Writes are
serialized so an older set can never be renamed over a newer one.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Iterable

from segment.file_io import replace_file

from broker.security.acl.authorizer import Authorizer, AuthorizerSettings
from broker.security.acl.model import AclBinding, AclFilter

FILE_NAME = "acls.json"


class AclStore:
    def __init__(self, data_dir: Path, settings: AuthorizerSettings) -> None:
        self._path = Path(data_dir) / FILE_NAME
        self._acls: set[AclBinding] = set()
        if self._path.exists():
            body = json.loads(self._path.read_text())
            self._acls = {AclBinding.from_json(d) for d in body["acls"]}
        self.authorizer = Authorizer(settings, self._acls)
        self._write_lock = asyncio.Lock()

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return sorted(a for a in self._acls if acl_filter.matches(a))

    async def create(self, acls: Iterable[AclBinding]) -> None:
        """Adds bindings (checked by the caller); one that exists already is no change."""
        async with self._write_lock:
            new = self._acls | set(acls)
            if new != self._acls:
                await self._commit(new)

    async def delete(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """Removes what each filter matches; returns the bindings each one removed (a binding
        matched by two filters is reported by both, as Kafka does)."""
        async with self._write_lock:
            removed = [[a for a in sorted(self._acls) if f.matches(a)] for f in filters]
            gone = {a for matched in removed for a in matched}
            if gone:
                await self._commit(self._acls - gone)
            return removed

    async def _commit(self, acls: set[AclBinding]) -> None:
        text = json.dumps({"version": 1, "acls": [a.to_json() for a in sorted(acls)]}, indent=1)
        await asyncio.to_thread(replace_file, self._path, text)  # fsyncs: off the event loop
        self._acls = acls
        self.authorizer.replace(acls)
