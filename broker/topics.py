"""The topics this broker hosts (topic.py: one of them, with each partition's layout here).

Each partition opens in the engine of its layout (partition_files.py). The topics are persisted
in `<data-dir>/topics.json` (broker/storage/topics_file.py: its layout, replaced whole on every
change; a cluster member's keeps only the layouts). After a crash either the old or the new
file is whole; partition directories of a topic missing from the file are removed at start-up
(a create or delete that did not finish), in the background.

Changes keep one order, so that what a client sees is always backed by files (one change at a
time, under `_admin`; the file work in the admin worker thread, admin_worker.py):
- create / add partitions: the partitions' files are made (worker), the stores start serving
  them (event loop), topics.json lists them (worker), and only then does the topic (or its new
  partitions) appear: Metadata never names a partition that cannot take a produce, and a
  crash before the file write leaves directories of no topic, removed at the next start.
- delete: the topic disappears at once (event loop: the registry and the stores forget it),
  topics.json is written without it (worker), then its directories are renamed to `-delete`
  and removed after file.delete.delay.ms (segment/partition_removal.py).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Callable

from broker.partition_files import PartitionFiles
from broker.storage.admin_worker import AdminWorker
from broker.settings.config import BrokerConfig
from broker.settings.topic_configs import log_config_for
from replica.change_feed import ChangeFeed
from replica.readable_partition import ReadablePartition
from broker.storage.modes import StorageModes
from broker.storage import topics_file
from broker.storage.replica_layouts import ReplicaLayouts
from broker import key_topic
from wire.error_codes import ErrorCode
from broker.topic import Topic
from broker.topic_names import TopicError, check_topic_name, collision_key, illegal_name

log = logging.getLogger(__name__)


class TopicRegistry:
    def __init__(self, config: BrokerConfig, storage: StorageModes, changes: ChangeFeed | None = None) -> None:
        """`changes`: told of every hosted partition's log changes (replica/change_feed.py)."""
        self._config = config
        self._storage = storage
        self._data_dir = Path(config.data_dir)
        self.topics: dict[str, Topic] = {}
        self.by_id: dict[uuid.UUID, Topic] = {}
        self._key_topic_ids = key_topic.KeyTopicIds()
        self.worker = AdminWorker()
        self.files = PartitionFiles(config, storage, self.worker, changes)
        self._admin = asyncio.Lock()  # one change at a time: each writes topics.json whole
        self.layouts: ReplicaLayouts | None = None  # a cluster member's (load)
        # the defaults of a topic's configs: the static ones, then the dynamic broker configs' (set_defaults)
        self.log_defaults = config.log_defaults
        self.min_insync_replicas = config.min_insync_replicas

    def load(self) -> None:
        saved = topics_file.read(self._data_dir)
        layouts = {t.storage_mode for t in saved.values()} | {m for t in saved.values() for m in t.moved.values()}
        if self._config.etcd:
            # A cluster member's topics come from etcd (cluster_member.py applies each image),
            # topics.json says only which layout each replica here is in: open the engines now
            # so they recover before the first partition is hosted.
            stores = self._storage.open_at_start(layouts)
            on_disk: dict[tuple[str, int], set[str]] = {}
            for mode, store in stores.items():
                for key in store.existing_partitions():
                    on_disk.setdefault(key, set()).add(mode)
            self.layouts = ReplicaLayouts(self._storage.default_mode, {
                name: (t.topic_id, t.storage_mode, t.moved) for name, t in saved.items()}, on_disk)
            return

        def in_commitlog(name: str, index: int) -> bool:
            t = saved.get(name)
            return t is not None and index < t.partitions and t.moved.get(index, t.storage_mode) == "commitlog"

        # The commitlog store does not even open the queues of partitions it does not host (no
        # topic, or the partition's layout is the segment one: a move that did not commit).
        self._storage.open_at_start(layouts, wanted=in_commitlog)
        for name, t in saved.items():
            topic = Topic(name, t.topic_id, dict(t.configs), t.storage_mode, moved=dict(t.moved))
            self._register(topic)
            config, min_isr = self._log_config(topic), self._min_isr(topic)  # once for all its partitions
            for index in range(t.partitions):
                topic.partitions.append(self.files.open(topic, index, config, min_isr))
        self.files.remove_orphans(self.topics.values(), "its topic is not in topics.json")

    def _register(self, topic: Topic) -> None:
        self.topics[topic.name] = topic
        self.by_id[topic.topic_id] = topic

    def _log_config(self, topic: Topic):
        return log_config_for(self.log_defaults, topic.configs)

    def _min_isr(self, topic: Topic) -> int:
        return int(topic.configs.get("min.insync.replicas", self.min_insync_replicas))

    def _delete_delay_s(self, topic: Topic) -> float:
        """file.delete.delay.ms: how long a deleted partition's renamed files stay."""
        return self._log_config(topic).file_delete_delay_ms / 1000

    async def _open_many(self, topic: Topic, indexes: list[int]) -> list:
        return await self.files.open_many(topic, indexes, self._log_config(topic), self._min_isr(topic))

    def retire_files(self, topic: Topic, mode: str, indexes: list[int]) -> None:
        """The `mode` store forgets these partitions' files now; the worker removes them later."""
        self.files.retire_in(topic, mode, indexes, self._delete_delay_s(topic))

    async def _save(self, extra: list[Topic] = ()) -> None:
        """Write topics.json (in the worker) as the registry is, plus `extra` topics about to
        be registered."""
        listed = {t.name: t for t in self.topics.values()}
        listed.update((t.name, t) for t in extra)
        saved = {t.name: topics_file.SavedTopic(t.topic_id, t.storage_mode, dict(t.moved), len(t.partitions),
                                                dict(t.configs)) for t in listed.values()}
        await self.worker.run(topics_file.write, self._data_dir, saved, bool(self._config.etcd))
        if self.layouts is not None:
            self.layouts.saved({t.name: (t.topic_id, t.storage_mode, dict(t.moved)) for t in listed.values()})

    def get(self, name: str) -> Topic | None:
        topic = self.topics.get(name)
        if topic is None and name.startswith(key_topic.PREFIX):
            return self._key_lookup_topic(name)
        return topic

    def get_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        """A hosted topic, or a key-lookup topic served by name before (key_topic.KeyTopicIds)."""
        topic = self.by_id.get(topic_id)
        if topic is None and (name := self._key_topic_ids.name_of(topic_id)) is not None:
            return self._key_lookup_topic(name)
        return topic

    def _key_lookup_topic(self, name: str) -> Topic | None:
        """The read-only view of one key of a topic's partitions held in the commitlog layout
        here (key_topic.py); built per request. Its name obeys the rules of every topic name
        (249 characters at most)."""
        parsed = key_topic.parse(name) if illegal_name(name) is None else None
        source = self.topics.get(parsed[0]) if parsed else None
        keyed = [source.mode_of(i) == "commitlog" for i in range(len(source.partitions))] if source else []
        if not any(keyed):
            return None
        store = self._storage.store("commitlog")
        # None: held on another broker of the cluster, or here in the segment layout (no key index)
        views = [key_topic.KeyPartition(store, source.name, parsed[1], p) if p is not None and k else None
                 for p, k in zip(source.partitions, keyed)]
        topic_id = key_topic.topic_id_for(name)
        self._key_topic_ids.served(name, topic_id)
        return Topic(name, topic_id, {}, "commitlog", views)

    def partition(self, name: str, index: int) -> ReadablePartition | None:
        topic = self.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def check_collision(self, name: str, also: list[str] = ()) -> None:
        """Raises TopicError if a new topic `name` differs from an existing one (or one of
        `also`, being created with it) only in '.' vs '_'. Kafka names the first of its sorted
        set of colliding names: the least one."""
        if "." not in name and "_" not in name:
            return
        key = collision_key(name)
        colliding = [t for t in [*self.topics, *also] if t != name and collision_key(t) == key]
        if colliding:
            raise TopicError(ErrorCode.invalid_topic_exception,
                             f"Topic '{name}' collides with existing topic: {min(colliding)}")

    async def create(self, wanted: list[tuple[str, int, dict[str, str]]]) -> dict[str, Topic | TopicError]:
        """Create topics (validated configs), each on its own: its Topic or why not. One
        topics.json write for all of them."""
        results: dict[str, Topic | TopicError] = {}
        async with self._admin:
            made: list[Topic] = []
            for name, num_partitions, configs in wanted:
                try:
                    self._check_new(name, num_partitions, made)
                    topic = Topic(name, uuid.uuid4(), dict(configs), configs.get("storage.mode", self._storage.default_mode))
                    topic.partitions = await self._open_many(topic, list(range(num_partitions)))
                except TopicError as exc:
                    results[name] = exc
                    continue
                made.append(topic)
            await self._save(made)
            for topic in made:
                self._register(topic)
                results[topic.name] = topic
                log.info("created topic %s with %d partitions (%s storage) %s", topic.name, len(topic.partitions),
                         topic.storage_mode, topic.configs or "")
        return results

    def _check_new(self, name: str, num_partitions: int, made: list[Topic]) -> None:
        check_topic_name(name)
        if name in self.topics or any(t.name == name for t in made):
            raise TopicError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        self.check_collision(name, [t.name for t in made])
        if num_partitions <= 0:
            raise TopicError(ErrorCode.invalid_partitions, f"Number of partitions must be larger than 0, got {num_partitions}")

    async def delete(self, name: str) -> Topic:
        async with self._admin:
            return await self._delete(name)

    async def _delete(self, name: str) -> Topic:
        topic = self.topics.pop(name, None)
        if topic is None:
            raise TopicError(ErrorCode.unknown_topic_or_partition, f"Topic '{name}' does not exist")
        del self.by_id[topic.topic_id]
        hosted = [p.index for p in topic.partitions if p is not None]
        for p in topic.partitions:
            if p is not None:
                self.files.removed(p)
        detached = self.files.detach(topic, hosted)
        await self._save()  # before the rename: a crash in between must not keep the topic without its files
        self.files.retire(detached, self._delete_delay_s(topic))
        log.info("deleted topic %s (%d partitions here; files removed in the background)", name, len(hosted))
        return topic

    async def add_partitions(self, name: str, total: int) -> None:
        async with self._admin:
            topic = self.topics.get(name)
            if topic is None:
                raise TopicError(ErrorCode.unknown_topic_or_partition, f"Topic '{name}' does not exist")
            current = len(topic.partitions)
            if total <= current:
                raise TopicError(
                    ErrorCode.invalid_partitions,
                    f"Topic currently has {current} partitions, which is higher than the requested {total}.",
                )
            added = await self._open_many(topic, list(range(current, total)))
            grown = replace(topic, partitions=topic.partitions + added)
            await self._save([grown])
            topic.partitions.extend(added)

    async def alter_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replace a topic's config overrides (validated): topics.json first, then the live
        partitions, so a crash never leaves partitions running on a config the file lacks."""
        async with self._admin:
            topic = self.topics.get(name)
            if topic is None:
                raise TopicError(ErrorCode.unknown_topic_or_partition, f"Topic '{name}' does not exist")
            changed = replace(topic, configs=dict(configs))
            await self._save([changed])
            topic.configs = dict(configs)
            self.apply_configs(topic)
        log.info("altered the configs of topic %s: %s", name, configs or "(defaults)")

    async def change_layout(self, topic: Topic, index: int, mode: str, swap: Callable[[], bool]) -> bool:
        """The commit point of a log-dir move (broker/storage/log_dir_move.py): topics.json names
        `mode` for partition `index`, then `swap()` runs on the loop before any later change is
        written; should it refuse (False), topics.json is written back at once. Raises
        TopicError when the topic was deleted meanwhile."""
        async with self._admin:
            if self.topics.get(topic.name) is not topic:
                raise TopicError(ErrorCode.unknown_topic_or_partition, f"Topic '{topic.name}' was deleted")
            moved = {i: m for i, m in {**topic.moved, index: mode}.items() if m != topic.storage_mode}
            await self._save([replace(topic, moved=moved)])
            if not swap():
                await self._save()
                return False
            topic.moved = moved
            return True

    def apply_configs(self, topic: Topic) -> None:
        """The topic's configs take effect on its live partitions: retention, roll, cleanup
        policy and flush at the log's next check, min.insync.replicas at the next produce."""
        cfg = self._log_config(topic)
        min_isr = self._min_isr(topic)
        for p in topic.partitions:
            if p is not None:
                p.update_config(cfg, min_isr)

    def set_defaults(self, log_defaults, min_insync_replicas: int) -> None:
        """New topic defaults (dynamic broker configs: dynamic_topic_defaults.py): new partitions
        open with them, and every hosted topic's partitions take them (apply_configs), its own
        overrides still on top."""
        if (log_defaults, min_insync_replicas) == (self.log_defaults, self.min_insync_replicas):
            return
        self.log_defaults, self.min_insync_replicas = log_defaults, min_insync_replicas
        for topic in self.topics.values():
            self.apply_configs(topic)

    def all_partitions(self):
        """Every partition hosted here (in a cluster, a topic lists None for the others)."""
        for topic in self.topics.values():
            yield from (p for p in topic.partitions if p is not None)

    def missing_partition_error(self, name: str, index: int) -> ErrorCode:
        """The answer for a partition not hosted here: Kafka's NOT_LEADER_OR_FOLLOWER when the
        cluster has it (the client's metadata is stale), else UNKNOWN_TOPIC_OR_PARTITION."""
        topic = self.topics.get(name)
        if topic is not None and 0 <= index < len(topic.partitions):
            return ErrorCode.not_leader_or_follower
        return ErrorCode.unknown_topic_or_partition

    # ----- a cluster member: topics as etcd has them (cluster_member.py) ----------------

    async def host(self, name: str, topic_id: uuid.UUID, configs: dict[str, str],
                   replicas: list[tuple[int, ...]]) -> tuple[Topic, list[int]]:
        """Make the local topic match etcd's record: every partition listed, the ones whose
        replicas include this broker opened (recovering their files) in this broker's layout
        for them (ReplicaLayouts). Returns the topic and the indexes of partitions no longer
        hosted here (their files are deleted). A new topic is registered once its partitions
        here are open and topics.json names their layouts."""
        async with self._admin:
            topic = self.topics.get(name)
            if topic is not None and topic.topic_id != topic_id:
                await self._delete(name)  # deleted and created again under the same name
                topic = None
            hosted = [self._config.node_id in nodes for nodes in replicas]
            new = topic is None
            if new:
                mode, moved = self.layouts.choose(name, topic_id, configs, [i for i, h in enumerate(hosted) if h])
                topic = Topic(name, topic_id, dict(configs), mode, moved=moved)
            elif topic.configs != configs:  # IncrementalAlterConfigs / AlterConfigs on some broker
                topic.configs = dict(configs)
                self.apply_configs(topic)
            while len(topic.partitions) < len(replicas):
                topic.partitions.append(None)
            dropped = [i for i, p in enumerate(topic.partitions) if p is not None and not hosted[i]]
            for index in dropped:
                self.files.removed(topic.partitions[index])
                topic.partitions[index] = None
            if dropped:
                self.files.retire(self.files.detach(topic, dropped), self._delete_delay_s(topic))
                topic.moved = {i: m for i, m in topic.moved.items() if i not in dropped}
            opening = [i for i, p in enumerate(topic.partitions) if p is None and hosted[i]]
            if opening:
                for index, partition in zip(opening, await self._open_many(topic, opening)):
                    topic.partitions[index] = partition
            if not self.layouts.recorded(name, topic_id, topic.storage_mode, topic.moved):
                await self._save([topic])
            if new:
                self._register(topic)
            return topic, dropped

    async def remove_orphans(self) -> None:
        """Remove partition files of topics etcd does not have (after the first image)."""
        async with self._admin:
            self.files.remove_orphans(self.topics.values(), "not hosted here in the cluster's metadata")

