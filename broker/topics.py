"""The topics this broker hosts: names, ids, partition counts, configs.

Each topic keeps its data in the engine of its storage mode (storage_modes.py), fixed at
creation. Persisted as `<data-dir>/topics.json`, rewritten atomically (temp file, fsync,
rename, fsync of the directory) on every change, with the previous version
kept as `topics.json.bak`. After a crash either the old or the new file is
whole; partition directories of a topic missing from the file are removed at
start-up (a create or delete that did not finish).
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import key_topic
from .config import BrokerConfig, log_config_for
from replica.partition import Partition
from .storage_modes import StorageModes

log = logging.getLogger(__name__)

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class TopicError(Exception):
    """Carries the Kafka error code name for the handler."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def illegal_name(name: str) -> str | None:
    """Why no topic can have this name (Kafka's Topic.validate, in its words), or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, topic name: {name}"
    if not _LEGAL.fullmatch(name):  # fullmatch: a `$` would let a trailing newline through
        return f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def check_topic_name(name: str) -> None:
    """A name a topic may be created with; raises TopicError."""
    if name.startswith(key_topic.PREFIX):
        raise TopicError("invalid_topic_exception",
                         f"Topic names starting with {key_topic.PREFIX!r} are reserved for key lookups")
    reason = illegal_name(name)
    if reason is not None:
        raise TopicError("invalid_topic_exception", reason)


def check_internal_change(name: str, allowed: bool, change: str) -> None:
    """Refuse DeleteTopics / CreatePartitions on an internal topic unless the operator allowed it.

    Kafka's own tools refuse both ("is a kafka internal topic and is not allowed to be marked
    for deletion", "The number of partitions for the offsets topic cannot be changed"): deleting
    __consumer_offsets erases every committed offset, and more partitions send a group's new
    commits to another partition than its old ones, so replay (partition by partition) can
    restore an old offset. One request should not do either. INVALID_TOPIC_EXCEPTION is what
    Kafka answers for its other internal-topic refusals (Produce, DeleteRecords).
    """
    if name in INTERNAL_TOPICS and not allowed:
        raise TopicError("invalid_topic_exception",
                         f"Topic {name} is an internal topic and is not allowed to be {change} "
                         "(the broker's --allow-internal-topic-changes allows it)")


def _collision_key(name: str) -> str:
    # Kafka's Topic.unifyCollisionChars: metric names turn '.' into '_', so "a.b" and "a_b"
    # would report as one topic; Kafka refuses the second name.
    return name.replace(".", "_")


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str]
    storage_mode: str = "segment"
    partitions: list[Partition] = field(default_factory=list)

    @property
    def internal(self) -> bool:
        # Kafka's Topic.isInternal: these two names only, not every "__" prefix (a key-lookup
        # topic is not internal: clients that exclude internal topics must still see it).
        return self.name in INTERNAL_TOPICS


class TopicRegistry:
    def __init__(self, config: BrokerConfig, storage: StorageModes) -> None:
        self._config = config
        self._storage = storage
        self._path = Path(config.data_dir) / "topics.json"
        self.topics: dict[str, Topic] = {}
        self.by_id: dict[uuid.UUID, Topic] = {}

    def load(self) -> None:
        if self._config.etcd:
            # A cluster member's topics come from etcd (cluster_member.py applies each image):
            # open the engines now so they recover before the first partition is hosted.
            self._storage.open_at_start(set())
            return
        saved = {}
        if self._path.exists():
            saved = json.loads(self._path.read_text())
        entries = saved.get("topics", {})
        # Files written before storage modes existed are all in the segment layout.
        modes = {name: entry.get("storage_mode", "segment") for name, entry in entries.items()}
        stores = self._storage.open_at_start(set(modes.values()))
        for name, entry in entries.items():
            topic = Topic(name, uuid.UUID(entry["id"]), dict(entry["configs"]), modes[name])
            self._register(topic)
            for index in range(entry["partitions"]):
                topic.partitions.append(self._open(topic, index))
        for mode, store in stores.items():
            known = {(t.name, p.index) for t in self.topics.values() if t.storage_mode == mode
                     for p in t.partitions if p is not None}
            for topic_name, index in store.existing_partitions():
                if (topic_name, index) not in known:
                    log.warning("removing %s partition %s-%d: its topic is not in topics.json",
                                mode, topic_name, index)
                    store.delete_partition(topic_name, index)

    def _register(self, topic: Topic) -> None:
        self.topics[topic.name] = topic
        self.by_id[topic.topic_id] = topic

    def _open(self, topic: Topic, index: int) -> Partition:
        cfg = log_config_for(self._config.log_defaults, topic.configs)
        log_ = self._storage.store(topic.storage_mode).open_partition(topic.name, index, cfg)
        min_isr = int(topic.configs.get("min.insync.replicas", self._config.min_insync_replicas))
        return Partition(topic.name, index, log_, self._config.node_id, cfg, min_insync_replicas=min_isr,
                         lag_time_max_ms=self._config.replica_lag_time_max_ms, lead_alone=not self._config.etcd)

    def _save(self) -> None:
        if self._config.etcd:
            return  # a cluster member's topics live in etcd
        data = {
            "version": 1,
            "topics": {
                t.name: {"id": str(t.topic_id), "partitions": len(t.partitions), "configs": t.configs,
                         "storage_mode": t.storage_mode}
                for t in self.topics.values()
            },
        }
        tmp = self._path.with_suffix(".json.tmp")
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        if self._path.exists():
            os.replace(self._path, self._path.with_suffix(".json.bak"))
        os.replace(tmp, self._path)
        dir_fd = os.open(self._path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def get(self, name: str) -> Topic | None:
        topic = self.topics.get(name)
        if topic is None and name.startswith(key_topic.PREFIX):
            return self._key_lookup_topic(name)
        return topic

    def _key_lookup_topic(self, name: str) -> Topic | None:
        """The read-only view of one key of a commitlog topic (key_topic.py); built per request.
        Its name obeys the rules of every topic name (249 characters at most)."""
        parsed = key_topic.parse(name) if illegal_name(name) is None else None
        source = self.topics.get(parsed[0]) if parsed else None
        if source is None or source.storage_mode != "commitlog":
            return None
        store = self._storage.store("commitlog")
        views = [None if p is None else key_topic.KeyPartition(store, source.name, parsed[1], p)
                 for p in source.partitions]  # None: hosted on another broker of the cluster
        return Topic(name, key_topic.topic_id_for(name), {}, "commitlog", views)

    def partition(self, name: str, index: int) -> Partition | None:
        topic = self.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            return None
        return topic.partitions[index]

    def check_collision(self, name: str) -> None:
        """Raises TopicError if a new topic `name` differs from an existing one only in '.' vs '_'.
        Kafka names the first of its sorted set of colliding names: the least one."""
        if "." not in name and "_" not in name:
            return
        key = _collision_key(name)
        colliding = [t for t in self.topics if t != name and _collision_key(t) == key]
        if colliding:
            raise TopicError("invalid_topic_exception",
                             f"Topic '{name}' collides with existing topic: {min(colliding)}")

    def create(self, name: str, num_partitions: int, configs: dict[str, str]) -> Topic:
        """Create a topic (validated configs); raises TopicError."""
        check_topic_name(name)
        if name in self.topics:
            raise TopicError("topic_already_exists", f"Topic '{name}' already exists.")
        self.check_collision(name)
        if num_partitions <= 0:
            raise TopicError("invalid_partitions", f"Number of partitions must be larger than 0, got {num_partitions}")
        mode = configs.get("storage.mode", self._storage.default_mode)
        topic = Topic(name, uuid.uuid4(), dict(configs), mode)
        topic.partitions = [self._open(topic, i) for i in range(num_partitions)]
        self._register(topic)
        self._save()
        log.info("created topic %s with %d partitions (%s storage) %s", name, num_partitions, mode, configs or "")
        return topic

    def delete(self, name: str) -> Topic:
        topic = self.topics.pop(name, None)
        if topic is None:
            raise TopicError("unknown_topic_or_partition", f"Topic '{name}' does not exist")
        del self.by_id[topic.topic_id]
        self._save()
        for p in topic.partitions:
            if p is not None:
                p.wake_all()
                self._storage.store(topic.storage_mode).delete_partition(name, p.index)
        log.info("deleted topic %s", name)
        return topic

    def add_partitions(self, name: str, total: int) -> None:
        topic = self.topics.get(name)
        if topic is None:
            raise TopicError("unknown_topic_or_partition", f"Topic '{name}' does not exist")
        current = len(topic.partitions)
        if total <= current:
            raise TopicError(
                "invalid_partitions",
                f"Topic currently has {current} partitions, which is higher than the requested {total}.",
            )
        topic.partitions.extend(self._open(topic, i) for i in range(current, total))
        self._save()

    async def alter_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replace a topic's config overrides (validated): topics.json first, then the live
        partitions, so a crash never leaves partitions running on a config the file lacks."""
        topic = self.topics.get(name)
        if topic is None:
            raise TopicError("unknown_topic_or_partition", f"Topic '{name}' does not exist")
        old, topic.configs = topic.configs, dict(configs)
        try:
            self._save()
        except OSError:
            topic.configs = old
            raise
        self.apply_configs(topic)
        log.info("altered the configs of topic %s: %s", name, configs or "(defaults)")

    def apply_configs(self, topic: Topic) -> None:
        """The topic's configs take effect on its live partitions: retention, roll, cleanup
        policy and flush at the log's next check, min.insync.replicas at the next produce."""
        cfg = log_config_for(self._config.log_defaults, topic.configs)
        min_isr = int(topic.configs.get("min.insync.replicas", self._config.min_insync_replicas))
        for p in topic.partitions:
            if p is not None:
                p.config = cfg
                p.log.update_config(cfg)
                p.min_insync_replicas = min_isr

    def all_partitions(self):
        """Every partition hosted here (in a cluster, a topic lists None for the others)."""
        for topic in self.topics.values():
            yield from (p for p in topic.partitions if p is not None)

    def missing_partition_error(self, name: str, index: int) -> str:
        """The answer for a partition not hosted here: Kafka's NOT_LEADER_OR_FOLLOWER when the
        cluster has it (the client's metadata is stale), else UNKNOWN_TOPIC_OR_PARTITION."""
        topic = self.topics.get(name)
        if topic is not None and 0 <= index < len(topic.partitions):
            return "not_leader_or_follower"
        return "unknown_topic_or_partition"

    # ----- a cluster member: topics as etcd has them (cluster_member.py) ----------------

    def host(self, name: str, topic_id: uuid.UUID, configs: dict[str, str], storage_mode: str,
             replicas: list[tuple[int, ...]]) -> tuple[Topic, list[int]]:
        """Make the local topic match etcd's record: every partition listed, the ones whose
        replicas include this broker opened (recovering their files). Returns the topic and
        the indexes of partitions no longer hosted here (their files are deleted)."""
        topic = self.topics.get(name)
        if topic is not None and topic.topic_id != topic_id:
            self.delete(name)  # deleted and created again under the same name
            topic = None
        if topic is None:
            topic = Topic(name, topic_id, dict(configs), storage_mode)
            self._register(topic)
        topic.configs = dict(configs)
        dropped = []
        while len(topic.partitions) < len(replicas):
            topic.partitions.append(None)
        for index, nodes in enumerate(replicas):
            hosted = self._config.node_id in nodes
            if hosted and topic.partitions[index] is None:
                topic.partitions[index] = self._open(topic, index)
            elif not hosted and topic.partitions[index] is not None:
                topic.partitions[index].wake_all()
                self._storage.store(topic.storage_mode).delete_partition(name, index)
                topic.partitions[index] = None
                dropped.append(index)
        return topic, dropped

    def remove_orphans(self) -> None:
        """Delete partition files of topics etcd does not have (after the first image)."""
        for mode, store in self._storage.opened().items():
            hosted = {(t.name, p.index) for t in self.topics.values() if t.storage_mode == mode
                      for p in t.partitions if p is not None}
            for topic_name, index in store.existing_partitions():
                if (topic_name, index) not in hosted:
                    log.warning("removing %s partition %s-%d: not hosted here in the cluster's metadata",
                                mode, topic_name, index)
                    store.delete_partition(topic_name, index)
