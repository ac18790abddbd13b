"""The files of the partitions the topic registry hosts (topics.py), in each layout's store.

Opening a partition makes (or recovers) its files in the store of its layout (storage/modes.py)
and wraps its log in a replica.Partition. Many at once (a create, added partitions, a cluster
member taking replicas) are made in the admin worker (admin_worker.py), all or none of them,
then the stores start serving them on the event loop, INSTALL_CHUNK at a time between turns of
the loop. Retiring partitions has the stores forget them at once and the worker rename, then
remove, their directories after the topic's file.delete.delay.ms.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from broker.heap_freezer import HeapFreezer
from broker.settings.config import BrokerConfig
from broker.storage.admin_worker import AdminWorker
from broker.storage.modes import StorageModes
from broker.topic import Topic
from broker.topic_names import TopicError
from replica.change_feed import ChangeFeed
from replica.partition import Partition
from segment.log import LogConfig, PartitionLog
from segment.partition_removal import PartitionRemoval
from wire.error_codes import ErrorCode

log = logging.getLogger(__name__)

INSTALL_CHUNK = 500  # partitions handed to a store between two turns of the event loop


class PartitionFiles:
    def __init__(self, config: BrokerConfig, storage: StorageModes, worker: AdminWorker,
                 changes: ChangeFeed | None = None) -> None:
        """`changes`: told of every hosted partition's log changes (replica/change_feed.py)."""
        self._config = config
        self._storage = storage
        self._worker = worker
        self._changes = changes
        self._heap = HeapFreezer()  # partitions are most of the long-lived heap (heap_freezer.py)

    def open(self, topic: Topic, index: int, config: LogConfig, min_insync_replicas: int) -> Partition:
        """One partition, its files recovered (start-up): in the caller's thread."""
        store = self._storage.store(topic.mode_of(index))
        return self._partition(topic, index, store.open_partition(topic.name, index, config), config,
                               min_insync_replicas)

    async def open_many(self, topic: Topic, indexes: list[int], config: LogConfig,
                        min_insync_replicas: int) -> list[Partition]:
        """Open (create) the topic's partitions, each in its layout: files in the worker, then
        the store serves them, INSTALL_CHUNK at a time between turns of the loop. Raises
        TopicError (and leaves no file behind) if the files cannot be made."""
        prepared: list[tuple[object, list[int], list]] = []
        for mode, in_mode in topic.by_mode(indexes).items():
            store = self._storage.store(mode)
            plogs = await self._worker.run(_prepare_all, store, topic.name, in_mode, config)
            if isinstance(plogs, OSError):
                for store, _, made in prepared:
                    for plog in made:
                        store.discard_prepared(plog)
                raise TopicError(ErrorCode.kafka_storage_error,
                                 f"Cannot create the partitions of {topic.name}: {plogs}")
            prepared.append((store, in_mode, plogs))
        opened = {}
        for store, in_mode, plogs in prepared:
            for index, plog in zip(in_mode, plogs):
                opened[index] = self._partition(topic, index, store.install_partition(plog), config,
                                                min_insync_replicas)
                if len(opened) % INSTALL_CHUNK == 0:
                    await asyncio.sleep(0)
        return [opened[index] for index in indexes]

    def _partition(self, topic: Topic, index: int, log_: PartitionLog, config: LogConfig,
                   min_insync_replicas: int) -> Partition:
        self._heap.grew()
        return Partition(topic.name, index, log_, self._config.node_id, config,
                         min_insync_replicas=min_insync_replicas,
                         lag_time_max_ms=self._config.replica_lag_time_max_ms, lead_alone=not self._config.etcd,
                         changes=self._changes)

    def removed(self, partition: Partition) -> None:
        """A partition no longer hosted: parked fetches answer now, without it."""
        partition.wake_all()
        self._heap.shrank()
        if self._changes is not None:
            self._changes.forget(partition)

    def detach(self, topic: Topic, indexes: list[int]) -> list[tuple[object, PartitionRemoval]]:
        """Every store forgets these partitions of `topic` now; `retire` removes their files."""
        return [(store := self._storage.store(mode), store.detach_partitions([(topic.name, i) for i in in_mode]))
                for mode, in_mode in topic.by_mode(indexes).items()]

    def retire(self, detached: list[tuple[object, PartitionRemoval]], delay_s: float) -> None:
        """The worker renames the detached partitions' directories now and removes them after
        `delay_s`; then each store reclaims what only they still needed."""
        for store, removal in detached:
            self._worker.retire(removal, store.reclaim, delay_s)

    def retire_in(self, topic: Topic, mode: str, indexes: list[int], delay_s: float) -> None:
        """The `mode` store forgets these partitions' files now; the worker removes them later."""
        store = self._storage.store(mode)
        self._worker.retire(store.detach_partitions([(topic.name, i) for i in indexes]), store.reclaim, delay_s)

    def remove_orphans(self, topics: Iterable[Topic], why: str) -> None:
        """Detach every partition on disk none of `topics` hosts here; the worker removes them
        while the broker answers (10,000 in the commitlog layout took 270 s when it did not)."""
        topics = list(topics)
        for mode, store in self._storage.opened().items():
            hosted = {(t.name, p.index) for t in topics
                      for p in t.partitions if p is not None and t.mode_of(p.index) == mode}
            removal = store.detach_orphans(hosted)
            if len(removal):
                shown = ", ".join(d.name for d in removal.directories[:5])
                log.warning("removing %d %s partition directories (%s%s): %s", len(removal), mode, shown,
                            ", ..." if len(removal) > 5 else "", why)
                self._worker.retire(removal, None, delay_s=0)


def _prepare_all(store, topic: str, indexes: list[int], config: LogConfig) -> list | OSError:
    """In the worker: every partition's files, or none of them (the OSError that stopped it:
    out of file descriptors, no space)."""
    prepared = []
    try:
        for index in indexes:
            prepared.append(store.prepare_partition(topic, index, config))
    except OSError as exc:
        # Their directories stay, empty: no topic has them, so the next start removes them.
        for plog in prepared:
            store.discard_prepared(plog)
        return exc
    return prepared
