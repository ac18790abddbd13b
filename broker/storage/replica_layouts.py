"""Which layout each replica a cluster member holds is in: the broker's choice, not the topic's.

In a cluster a topic's record in etcd says which brokers hold its partitions, never how: each
broker keeps its replicas in the layout it chooses, and replication ships logical batches
(the follower's append keeps the leader's offsets and epochs in either layout), so a leader in
segments may have a follower in its commitlog. The layout of a replica this broker starts to
hold is, in order:

1. the one its topics.json names (what it held before a restart, a log-dir move included);
2. with no entry there (a data dir from before the layouts were recorded, or a crash between
   making the files and writing topics.json): the layout its files are in;
3. a new replica: the topic's explicit `storage.mode` config, which every broker honours, else
   this broker's own `storage.mode` setting.

topics.json is written (TopicRegistry._save) whenever what this broker holds changes, after the
files are made and before the replica serves, so the next start opens each replica where its
acknowledged records are. The partition files of the other layout are orphans then, removed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

# name -> (topic id, the layout of new partitions here, partitions in the other layout)
Saved = dict[str, tuple[uuid.UUID, str, dict[int, str]]]


class ReplicaLayouts:
    def __init__(self, default_mode: str, saved: Saved, on_disk: dict[tuple[str, int], set[str]]) -> None:
        """`saved`: topics.json's layouts; `on_disk`: the layouts whose files each partition has."""
        self._default = default_mode
        self._saved = saved
        self._on_disk = on_disk

    def choose(self, name: str, topic_id: uuid.UUID, configs: dict[str, str],
               hosted: Iterable[int]) -> tuple[str, dict[int, str]]:
        """A topic new to this broker's registry: the layout of its new partitions here, and
        which of the `hosted` partitions are in the other one."""
        hosted = set(hosted)
        saved = self._saved.get(name)
        if saved is not None and saved[0] == topic_id:
            mode, moved = saved[1], saved[2]
            return mode, {i: m for i, m in moved.items() if i in hosted}
        mode = configs.get("storage.mode", self._default)
        moved = {}
        for index in hosted:
            found = self._on_disk.get((name, index), set())
            if found and mode not in found:
                moved[index] = min(found)
        return mode, moved

    def recorded(self, name: str, topic_id: uuid.UUID, mode: str, moved: dict[int, str]) -> bool:
        """Whether topics.json already says this of the topic."""
        return self._saved.get(name) == (topic_id, mode, moved)

    def saved(self, saved: Saved) -> None:
        """topics.json now says `saved`."""
        self._saved = saved
