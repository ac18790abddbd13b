"""What a broker knows of the cluster: an immutable snapshot of the etcd prefix, and its changes.

`MetadataImage` is what handlers and the ReplicaManager read; it is replaced whole, never
changed in place, so a reader holding one sees a consistent cluster. `ImageBuilder` applies
etcd's key events (or a full reload) to mutable maps; `snapshot()` freezes them into the next
image, and `MetadataChange.between(old, new)` says what differs, which is what listeners get.
Computing the change from two images rather than from single events makes a reload after a
lost watch and a burst of events look the same to a listener.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from broker.cluster.etcd_layout import (AclList, BrokerConfigs, BrokerRegistration, ClientQuotaList,
                                        ControllerRecord, DelegationTokenRecord, EtcdLayout, FinalizedFeatures,
                                        GroupConfigs, PartitionState, ScramUser, TopicRecord)

PartitionKey = tuple[str, int]


@dataclass(frozen=True)
class MetadataImage:
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=lambda: MappingProxyType({}))
    controller: ControllerRecord | None = None
    topics: Mapping[str, TopicRecord] = field(default_factory=lambda: MappingProxyType({}))
    partitions: Mapping[PartitionKey, PartitionState] = field(default_factory=lambda: MappingProxyType({}))
    revision: int = 0  # the etcd revision this image reflects
    # SCRAM credentials by user: read by logins, no listener needs their changes
    scram_users: Mapping[str, ScramUser] = field(default_factory=lambda: MappingProxyType({}))
    acls: AclList = AclList(())  # read by the authorizer (broker/security/acl/cluster_store.py)
    # token id -> a delegation token: read by logins and the token APIs (cluster_token_store.py)
    delegation_tokens: Mapping[str, DelegationTokenRecord] = field(default_factory=lambda: MappingProxyType({}))
    client_quotas: ClientQuotaList = ClientQuotaList(())  # read by the quota managers (broker/quotas/cluster_store.py)
    # group id -> its config overrides: read by share-partitions (broker/groups/group_config_store.py)
    group_configs: Mapping[str, GroupConfigs] = field(default_factory=lambda: MappingProxyType({}))
    # broker id or "" (the cluster default) -> its dynamic configs (broker/settings/dynamic_broker_store.py)
    broker_configs: Mapping[str, BrokerConfigs] = field(default_factory=lambda: MappingProxyType({}))
    features: FinalizedFeatures | None = None  # what UpdateFeatures finalized (broker/features.py)
    # (suspect, voter) -> the suspect's broker_epoch the voter saw refuse (fencing.py)
    suspicions: Mapping[tuple[int, int], int] = field(default_factory=lambda: MappingProxyType({}))

    def live_broker_ids(self) -> set[int]:
        """Brokers that may lead, join an ISR or get new replicas: registered, and not in a
        controlled shutdown (those are still listed to clients until they leave)."""
        return {b for b, reg in self.brokers.items() if not reg.shutting_down}

    def partition(self, topic: str, index: int) -> PartitionState | None:
        return self.partitions.get((topic, index))

    def partitions_of(self, topic: str) -> list[PartitionState]:
        record = self.topics.get(topic)
        if record is None:
            return []
        return [self.partitions[(topic, i)] for i in range(record.partition_count) if (topic, i) in self.partitions]


@dataclass(frozen=True)
class MetadataChange:
    """The difference between two images. A broker that registered again under a new
    broker_epoch (its session was lost, or it restarted) is both gone and joined."""

    brokers_joined: frozenset[int] = frozenset()
    brokers_gone: frozenset[int] = frozenset()
    brokers_shutting_down: frozenset[int] = frozenset()  # asked for a controlled shutdown since
    controller_changed: bool = False
    suspicions_changed: bool = False
    topics_created: frozenset[str] = frozenset()
    topics_deleted: frozenset[str] = frozenset()
    topics_changed: frozenset[str] = frozenset()  # configs or replica lists (added partitions)
    broker_configs_changed: bool = False  # dynamic broker configs: topic defaults among them (member.py)
    # (topic, index) -> (before, after); None on the side where the partition does not exist
    partitions: Mapping[PartitionKey, tuple[PartitionState | None, PartitionState | None]] = \
        field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.brokers_joined or self.brokers_gone or self.brokers_shutting_down or self.controller_changed
                    or self.suspicions_changed or self.topics_created or self.topics_deleted or self.topics_changed
                    or self.broker_configs_changed or self.partitions)

    @property
    def brokers_restarted(self) -> frozenset[int]:
        return self.brokers_joined & self.brokers_gone

    @classmethod
    def between(cls, old: MetadataImage, new: MetadataImage) -> "MetadataChange":
        joined = {b for b, reg in new.brokers.items()
                  if b not in old.brokers or old.brokers[b].broker_epoch != reg.broker_epoch}
        gone = {b for b, reg in old.brokers.items()
                if b not in new.brokers or new.brokers[b].broker_epoch != reg.broker_epoch}
        shutting_down = {b for b, reg in new.brokers.items()
                         if reg.shutting_down and not (b in old.brokers and old.brokers[b].shutting_down)}
        partitions = {}
        for key in old.partitions.keys() | new.partitions.keys():
            before, after = old.partitions.get(key), new.partitions.get(key)
            if before != after:
                partitions[key] = (before, after)
        return cls(
            brokers_joined=frozenset(joined),
            brokers_gone=frozenset(gone),
            brokers_shutting_down=frozenset(shutting_down),
            controller_changed=old.controller != new.controller,
            suspicions_changed=old.suspicions != new.suspicions,
            topics_created=frozenset(new.topics.keys() - old.topics.keys()),
            topics_deleted=frozenset(old.topics.keys() - new.topics.keys()),
            topics_changed=frozenset(t for t in new.topics.keys() & old.topics.keys()
                                     if new.topics[t] != old.topics[t]),
            broker_configs_changed=old.broker_configs != new.broker_configs,
            partitions=MappingProxyType(partitions),
        )


class ImageBuilder:
    """Mutable maps that etcd's events are applied to, in revision order."""

    def __init__(self, layout: EtcdLayout) -> None:
        self._layout = layout
        self.reset(0)

    def reset(self, revision: int) -> None:
        self.brokers: dict[int, BrokerRegistration] = {}
        self.controller: ControllerRecord | None = None
        self.topics: dict[str, TopicRecord] = {}
        self.partitions: dict[PartitionKey, PartitionState] = {}
        self.scram_users: dict[str, ScramUser] = {}
        self.acls = AclList(())
        self.delegation_tokens: dict[str, DelegationTokenRecord] = {}
        self.client_quotas = ClientQuotaList(())
        self.group_configs: dict[str, GroupConfigs] = {}
        self.broker_configs: dict[str, BrokerConfigs] = {}
        self.features: FinalizedFeatures | None = None
        self.suspicions: dict[tuple[int, int], int] = {}
        self.revision = revision

    def put(self, key: bytes, value: bytes, revision: int) -> None:
        decoded = self._layout.decode(key, value)
        self.revision = max(self.revision, revision)
        if decoded is None:
            return
        kind, record = decoded
        if kind == "brokers":
            self.brokers[record.node_id] = record
        elif kind == "controller":
            self.controller = record
        elif kind == "topics":
            self.topics[record.name] = record
        elif kind == "partitions":
            self.partitions[(record.topic, record.index)] = record
        elif kind == "scram":
            self.scram_users[record.name] = record
        elif kind == "acls":
            self.acls = record
        elif kind == "client_quotas":
            self.client_quotas = record
        elif kind == "group_configs":
            self.group_configs[record.group] = record
        elif kind == "delegation_tokens":
            self.delegation_tokens[record.token_id] = record
        elif kind == "broker_configs":
            self.broker_configs[record.name] = record
        elif kind == "features":
            self.features = record
        elif kind == "suspicions":
            self.suspicions[(record.suspect, record.voter)] = record.broker_epoch

    def delete(self, key: bytes, revision: int) -> None:
        parts = self._layout.parse_key(key)
        self.revision = max(self.revision, revision)
        if parts is None:
            return
        kind = parts[0]
        if kind == "brokers" and len(parts) == 2:
            self.brokers.pop(int(parts[1]), None)
        elif kind == "controller" and len(parts) == 1:
            self.controller = None
        elif kind == "topics" and len(parts) == 2:
            self.topics.pop(parts[1], None)
        elif kind == "partitions" and len(parts) == 3:
            self.partitions.pop((parts[1], int(parts[2])), None)
        elif kind == "scram" and len(parts) == 2:
            self.scram_users.pop(parts[1], None)
        elif kind == "acls" and len(parts) == 1:
            self.acls = AclList(())
        elif kind == "client_quotas" and len(parts) == 1:
            self.client_quotas = ClientQuotaList(())
        elif kind == "group_configs" and len(parts) == 2:
            self.group_configs.pop(parts[1], None)
        elif kind == "delegation_tokens" and len(parts) == 2:
            self.delegation_tokens.pop(parts[1], None)
        elif kind == "broker_configs" and len(parts) == 2:
            self.broker_configs.pop(parts[1], None)
        elif kind == "suspicions" and len(parts) == 3:
            self.suspicions.pop((int(parts[1]), int(parts[2])), None)

    def snapshot(self) -> MetadataImage:
        return MetadataImage(
            brokers=MappingProxyType(dict(self.brokers)),
            controller=self.controller,
            topics=MappingProxyType(dict(self.topics)),
            partitions=MappingProxyType(dict(self.partitions)),
            revision=self.revision,
            scram_users=MappingProxyType(dict(self.scram_users)),
            acls=self.acls,
            delegation_tokens=MappingProxyType(dict(self.delegation_tokens)),
            client_quotas=self.client_quotas,
            group_configs=MappingProxyType(dict(self.group_configs)),
            broker_configs=MappingProxyType(dict(self.broker_configs)),
            features=self.features,
            suspicions=MappingProxyType(dict(self.suspicions)),
        )
