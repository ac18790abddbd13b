"""Where a cluster keeps its ACLs: one etcd key, `<prefix>acls` (broker/cluster/etcd_layout.py),
so a CreateAcls or DeleteAcls answered by any broker binds every broker.

The same interface as the one-broker AclStore (store.py). Checks read this broker's current
MetadataImage (the etcd watch keeps it), never etcd itself: the Authorizer is rebuilt the first
time a check sees a new ACL list. A change is a compare-and-swap of the whole list (two brokers
changing ACLs at once both land) and returns once this broker's image shows it; another broker
applies it when its watch delivers the event, milliseconds later. The data dir's acls.json is
neither read nor written by a cluster member.
"""

from __future__ import annotations

from typing import Iterable

from broker.security.acl.authorizer import Authorizer, AuthorizerSettings
from broker.security.acl.model import AclBinding, AclFilter


class ClusterAclStore:
    def __init__(self, metadata, settings: AuthorizerSettings) -> None:
        self._metadata = metadata  # broker.cluster.ClusterMetadata
        self._settings = settings
        self._seen = None  # the image's AclList the authorizer was built from
        self._authorizer = Authorizer(settings)
        self._acls: frozenset[AclBinding] = frozenset()

    def _current(self) -> frozenset[AclBinding]:
        listed = self._metadata.image.acls
        if listed is not self._seen:
            self._acls = frozenset(AclBinding.from_json(e) for e in listed.entries)
            self._authorizer = Authorizer(self._settings, self._acls)
            self._seen = listed
        return self._acls

    @property
    def authorizer(self) -> Authorizer:
        self._current()
        return self._authorizer

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return sorted(a for a in self._current() if acl_filter.matches(a))

    async def create(self, acls: Iterable[AclBinding]) -> None:
        new = set(acls)
        if new - self._current():
            await self._metadata.update_acls(lambda entries: _entries(_bindings(entries) | new))

    async def delete(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """As AclStore.delete; what each filter removed is read from the list the swap replaced."""
        removed: list[list[AclBinding]] = []

        def decide(entries):
            before = sorted(_bindings(entries))
            removed[:] = [[a for a in before if f.matches(a)] for f in filters]
            gone = {a for matched in removed for a in matched}
            return _entries(set(before) - gone)
        if any(f.matches(a) for a in self._current() for f in filters):
            await self._metadata.update_acls(decide)
            return removed
        return [[] for _ in filters]


def _bindings(entries) -> set[AclBinding]:
    return {AclBinding.from_json(e) for e in entries}


def _entries(acls: set[AclBinding]) -> tuple[dict, ...]:
    return tuple(a.to_json() for a in sorted(acls))
