"""What a shard's replays changed since its last write, to put back if that write fails.

Kafka's coordinator runtime keeps a shard's state in timeline structures and, when an append
fails, reverts them to the snapshot of the last written offset: the state is again what the log
holds, and nothing else of the shard is touched. This is the same, kept by key: a shard's
`replay`, before it changes what a key names (a group, a transactional id, a share-partition),
hands `save` a function that records the key's current value and returns how to put it back.
Only the first change of a key since the last write counts (what the log holds); the runtime
calls `keep` once a write's records are in the log and `revert` when they are not, which puts
every saved key back, the last saved first. A load replays what the log holds: nothing is saved
until the runtime starts recording after it (`recording`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

Restore = Callable[[], None]


class UndoLog:
    def __init__(self) -> None:
        self._restores: dict[Hashable, Restore] = {}
        self.recording = False

    def save(self, key: Hashable, saving: Callable[[], Restore]) -> None:
        """Before a replay changes what `key` names: `saving()` takes its value now and returns
        how to put it back; called once per key between two writes, and not while loading."""
        if self.recording and key not in self._restores:
            self._restores[key] = saving()

    def keep(self) -> None:
        """The records replayed since the last write are in the log: their changes stay."""
        self._restores.clear()

    def revert(self) -> int:
        """The records replayed since the last write are not in the log: every key they changed
        is put back, the last saved first. How many keys were put back."""
        restores, self._restores = self._restores, {}
        for restore in reversed(list(restores.values())):
            restore()
        return len(restores)
