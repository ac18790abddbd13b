"""How a consumer or streams group is put back when the write of records replayed into it fails
(the restore its replay hands the runtime's undo log, broker/coordinator/undo.py).

Both kinds keep their groups as objects in their coordinator's map, each with members whose
session timers are theirs and a `dead` flag a timer or a request still holding the group reads.
Saved before the first record since the last write changes the group: a group that was not there
is forgotten again (unloaded: its timers stop); one that was gets back what its snapshot holds,
its place in the map if a tombstone took it, and a session for each member it brings back.
"""

from __future__ import annotations

from typing import Callable, Protocol, TypeVar

from broker.coordinator.undo import Restore


class Group(Protocol):
    dead: bool


G = TypeVar("G", bound=Group)
G_in = TypeVar("G_in", bound=Group, contravariant=True)


class Snapshot(Protocol[G_in]):
    def restore(self, group: G_in) -> None: ...


class GroupKind(Protocol[G]):
    groups: dict[str, G]

    def unload(self, group: G) -> None: ...

    def rearm(self, group: G) -> None: ...


def saving(kind: GroupKind[G], group_id: str, snapshot: Callable[[G], Snapshot[G]]) -> Restore:
    groups = kind.groups
    group = groups.get(group_id)
    if group is None:
        def forget() -> None:
            made = groups.pop(group_id, None)
            if made is not None:
                kind.unload(made)
        return forget
    saved, dead = snapshot(group), group.dead

    def restore() -> None:
        saved.restore(group)
        group.dead = dead
        if not dead:
            groups[group_id] = group
            kind.rearm(group)
    return restore
