"""The cluster's metadata as it lies in etcd: one key per record under a prefix, values JSON.

    <prefix>brokers/<node_id>           {"node_id", "host", "port", "broker_epoch",
                                         "endpoints": [[listener name, host, port], ...]}, and
                                        "shutting_down": true once it asked for a controlled
                                        shutdown; under the broker's session lease: gone when
                                        it expires or is revoked. host/port: the inter-broker
                                        listener's advertised address; endpoints: every
                                        listener's (Kafka's BrokerRegistration endpoints)
    <prefix>suspicions/<suspect>/<voter> "<n>": voter saw the suspect's port refuse connections;
                                        n is the broker_epoch of the suspect's registration it
                                        watched. Under the voter's session lease, so a fenced or
                                        dead voter's evidence goes with it (fencing.py)
    <prefix>controller                  {"node_id", "controller_epoch"}
                                        under the controller's session lease (the election)
    <prefix>controller_epoch            "<n>": the last controller epoch handed out, never leased
    <prefix>topics/<name>               {"topic_id", "configs", "storage_mode", "replicas"}
                                        replicas: one list of node ids per partition
    <prefix>partitions/<topic>/<index>  {"leader", "leader_epoch", "isr", "partition_epoch",
                                         "replicas"}  leader -1 = offline; during a reassignment
                                        also "adding_replicas", "removing_replicas" (reassignment.py)
    <prefix>producer_ids/next           "<n>": the first producer id no broker has been given
    <prefix>scram/<user, %-quoted>      {"<mechanism>": {"salt", "iterations", "stored_key",
                                         "server_key"}, ...}: one user's SCRAM credentials
                                        (broker/security/sasl_credentials.py's format); deleted with its
                                        last mechanism
    <prefix>acls                        {"acls": [{"resource_type", "resource_name", "pattern_type",
                                         "principal", "host", "operation", "permission"}, ...]}:
                                        every ACL of the cluster (broker/security/acl/model.py's JSON form),
                                        one key so a CreateAcls / DeleteAcls changes it at once
    <prefix>delegation_tokens/<token id> {"token_id", "owner", "requester", "renewers", "issue_ms",
                                         "max_ms", "expiry_ms", "scram", "key_check"}: one delegation
                                        token with its SCRAM credentials (broker/security/token_store.py's
                                        form; never its HMAC, which each broker derives from
                                        delegation.token.secret.key); deleted when expired at once or swept
    <prefix>group_configs/<group, %-quoted> {"<config>": "<value>", ...}: one group's config
                                        overrides (broker/settings/group_configs.py), as given;
                                        deleted with its last override
    <prefix>client_quotas               {"entities": [{"entity": [[type, name or null], ...],
                                         "quotas": {"<key>": <value>, ...}}, ...]}: every client
                                        quota (broker/quotas/store.py's form), one key as the ACLs
    <prefix>broker_configs/<name>       {"<config>": "<value>", ...}: dynamic broker configs of
                                        one broker id, or of the cluster default (name empty)
                                        (broker/settings/dynamic_broker_configs.py), as given;
                                        deleted with its last config
    <prefix>features                    {"levels": {"<feature>": <level>, ...}, "epoch": <n>}: the
                                        feature levels UpdateFeatures finalized (broker/features.py)
                                        and the epoch of that change; absent until the first one
    <prefix>cluster_id                  {"cluster_id"}: Kafka's cluster.id, written once by the
                                        first broker (ClusterMetadata.cluster_id); not in the image

etcd is the durable store (raft log + snapshot); nothing here is cached on a broker's disk, so
after any crash a broker reloads the whole prefix. A leased key disappears with its lease; every
other key changes only by a transaction that compares its mod revision (compare-and-swap).
A topic's "replicas" are its partitions' placement at creation; a partition's own "replicas"
are the current ones (a reassignment changes only those).
Topic names never contain "/" (Kafka's legal characters are [a-zA-Z0-9._-]), so keys parse
unambiguously. broker_epoch is the id of the lease the registration lives under: a broker that
registers again after losing its session comes back with a new one, as in Kafka.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

DEFAULT_PREFIX = "/twinlog/"
NO_LEADER = -1


@dataclass(frozen=True)
class Endpoint:
    name: str  # the listener's name, e.g. PLAINTEXT, CLIENT
    host: str
    port: int


@dataclass(frozen=True)
class BrokerRegistration:
    node_id: int
    host: str
    port: int
    broker_epoch: int
    # Kafka's controlled shutdown: the broker still serves, but leads nothing and leaves every
    # ISR; the controller treats it as gone for elections (MetadataImage.live_broker_ids)
    shutting_down: bool = False
    endpoints: tuple[Endpoint, ...] = ()  # every listener's advertised address

    def endpoint(self, listener_name: str) -> Endpoint | None:
        return next((e for e in self.endpoints if e.name == listener_name), None)


@dataclass(frozen=True)
class ScramUser:
    name: str
    credentials: dict[str, dict[str, Any]]  # mechanism -> the stored credential's fields


@dataclass(frozen=True)
class DelegationTokenRecord:
    token_id: str
    info: dict[str, Any]  # broker/security/delegation_token.py's TokenInformation.to_json()


@dataclass(frozen=True)
class AclList:
    entries: tuple[dict[str, str], ...]  # AclBinding.to_json() of each ACL, sorted


@dataclass(frozen=True)
class ClientQuotaList:
    entries: tuple[dict, ...]  # {"entity": [[type, name], ...], "quotas": {...}} each (broker/quotas/store.py)


@dataclass(frozen=True)
class GroupConfigs:
    group: str
    configs: dict[str, str]  # config name -> the value as given (group_configs.py checks it)


@dataclass(frozen=True)
class FinalizedFeatures:
    levels: dict[str, int]  # feature -> finalized level (0 included: finalized off)
    epoch: int  # Kafka's finalized-features epoch of the change that wrote these


@dataclass(frozen=True)
class BrokerConfigs:
    name: str  # a broker id, or "" for the cluster default
    configs: dict[str, str]  # config name -> the value as given (dynamic_broker_configs.py checks it)


@dataclass(frozen=True)
class Suspicion:
    suspect: int
    voter: int
    broker_epoch: int  # of the suspect's registration the voter watched


@dataclass(frozen=True)
class ControllerRecord:
    node_id: int
    controller_epoch: int


@dataclass(frozen=True)
class TopicRecord:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str]
    storage_mode: str
    replicas: tuple[tuple[int, ...], ...]

    @property
    def partition_count(self) -> int:
        return len(self.replicas)


@dataclass(frozen=True)
class PartitionState:
    topic: str
    index: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()  # an ongoing reassignment's new replicas (in `replicas` too)
    removing: tuple[int, ...] = ()  # and the ones it will drop

    @property
    def offline(self) -> bool:
        return self.leader == NO_LEADER


class EtcdLayout:
    """Key names and value codecs for one prefix; no I/O."""

    def __init__(self, prefix: str = DEFAULT_PREFIX) -> None:
        if not prefix.endswith("/"):
            prefix += "/"
        self.prefix = prefix.encode()

    # ------------------------------------------------------------------ keys
    def broker_key(self, node_id: int) -> bytes:
        return self.prefix + b"brokers/%d" % node_id

    def suspicion_key(self, suspect: int, voter: int) -> bytes:
        return self.prefix + b"suspicions/%d/%d" % (suspect, voter)

    @property
    def controller_key(self) -> bytes:
        return self.prefix + b"controller"

    @property
    def controller_epoch_key(self) -> bytes:
        return self.prefix + b"controller_epoch"

    def topic_key(self, name: str) -> bytes:
        return self.prefix + b"topics/" + name.encode()

    def partition_key(self, topic: str, index: int) -> bytes:
        return self.prefix + b"partitions/" + topic.encode() + b"/%d" % index

    def partitions_prefix(self, topic: str) -> bytes:
        return self.prefix + b"partitions/" + topic.encode() + b"/"

    def scram_key(self, user: str) -> bytes:
        return self.prefix + b"scram/" + quote(user, safe="").encode()

    def delegation_token_key(self, token_id: str) -> bytes:
        return self.prefix + b"delegation_tokens/" + quote(token_id, safe="").encode()

    def group_configs_key(self, group: str) -> bytes:
        return self.prefix + b"group_configs/" + quote(group, safe="").encode()

    def broker_configs_key(self, name: str) -> bytes:
        return self.prefix + b"broker_configs/" + name.encode()

    @property
    def features_key(self) -> bytes:
        return self.prefix + b"features"

    @property
    def acls_key(self) -> bytes:
        return self.prefix + b"acls"

    @property
    def client_quotas_key(self) -> bytes:
        return self.prefix + b"client_quotas"

    @property
    def producer_ids_key(self) -> bytes:
        return self.prefix + b"producer_ids/next"

    # ---------------------------------------------------------------- values
    @staticmethod
    def encode(record: BrokerRegistration | ControllerRecord | TopicRecord | PartitionState | ScramUser | AclList
               | GroupConfigs | DelegationTokenRecord | ClientQuotaList | BrokerConfigs | FinalizedFeatures
               | int) -> bytes:
        if isinstance(record, int):
            return str(record).encode()
        if isinstance(record, BrokerRegistration):
            body: dict[str, Any] = {"node_id": record.node_id, "host": record.host, "port": record.port,
                                    "broker_epoch": record.broker_epoch}
            if record.shutting_down:
                body["shutting_down"] = True
            if record.endpoints:
                body["endpoints"] = [[e.name, e.host, e.port] for e in record.endpoints]
        elif isinstance(record, ScramUser):
            body = record.credentials
        elif isinstance(record, AclList):
            body = {"acls": list(record.entries)}
        elif isinstance(record, ClientQuotaList):
            body = {"entities": list(record.entries)}
        elif isinstance(record, FinalizedFeatures):
            body = {"levels": record.levels, "epoch": record.epoch}
        elif isinstance(record, (GroupConfigs, BrokerConfigs)):
            body = record.configs
        elif isinstance(record, DelegationTokenRecord):
            body = record.info
        elif isinstance(record, ControllerRecord):
            body = {"node_id": record.node_id, "controller_epoch": record.controller_epoch}
        elif isinstance(record, TopicRecord):
            body = {"topic_id": str(record.topic_id), "configs": record.configs,
                    "storage_mode": record.storage_mode, "replicas": [list(r) for r in record.replicas]}
        else:
            body = {"leader": record.leader, "leader_epoch": record.leader_epoch, "isr": list(record.isr),
                    "partition_epoch": record.partition_epoch, "replicas": list(record.replicas)}
            if record.adding or record.removing:
                body.update(adding_replicas=list(record.adding), removing_replicas=list(record.removing))
        return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()

    def decode(self, key: bytes, value: bytes):
        """The record a key holds: (kind, record), kind one of brokers, controller,
        controller_epoch, suspicions, topics, partitions, producer_ids, scram, acls, client_quotas,
        group_configs, delegation_tokens, broker_configs, features; None for a key we do not own."""
        if not key.startswith(self.prefix):
            return None
        parts = key[len(self.prefix):].decode().split("/")
        kind = parts[0]
        if kind in ("controller_epoch", "producer_ids"):
            return kind, int(value)
        if kind == "suspicions" and len(parts) == 3:
            return kind, Suspicion(int(parts[1]), int(parts[2]), int(value))
        body = json.loads(value)
        if kind == "brokers" and len(parts) == 2:
            return kind, BrokerRegistration(int(parts[1]), body["host"], body["port"], body["broker_epoch"],
                                             bool(body.get("shutting_down", False)),
                                             tuple(Endpoint(*e) for e in body.get("endpoints", ())))
        if kind == "scram" and len(parts) == 2:
            return kind, ScramUser(unquote(parts[1]), body)
        if kind == "acls" and len(parts) == 1:
            return kind, AclList(tuple(body["acls"]))
        if kind == "client_quotas" and len(parts) == 1:
            return kind, ClientQuotaList(tuple(body["entities"]))
        if kind == "features" and len(parts) == 1:
            return kind, FinalizedFeatures(dict(body["levels"]), body["epoch"])
        if kind == "group_configs" and len(parts) == 2:
            return kind, GroupConfigs(unquote(parts[1]), dict(body))
        if kind == "delegation_tokens" and len(parts) == 2:
            return kind, DelegationTokenRecord(unquote(parts[1]), dict(body))
        if kind == "broker_configs" and len(parts) == 2:
            return kind, BrokerConfigs(parts[1], dict(body))
        if kind == "controller" and len(parts) == 1:
            return kind, ControllerRecord(body["node_id"], body["controller_epoch"])
        if kind == "topics" and len(parts) == 2:
            return kind, TopicRecord(parts[1], uuid.UUID(body["topic_id"]), dict(body["configs"]), body["storage_mode"],
                                     tuple(tuple(r) for r in body["replicas"]))
        if kind == "partitions" and len(parts) == 3:
            return kind, PartitionState(parts[1], int(parts[2]), body["leader"], body["leader_epoch"],
                                        tuple(body["isr"]), body["partition_epoch"], tuple(body["replicas"]),
                                        tuple(body.get("adding_replicas", ())),
                                        tuple(body.get("removing_replicas", ())))
        return None

    def parse_key(self, key: bytes) -> tuple[str, ...] | None:
        """A deleted key's identity: ("brokers", id), ("suspicions", suspect, voter), ("controller",), ("topics", name),
        ("partitions", topic, index), ("scram", user), ("group_configs", group), ("delegation_tokens", id),
        ("broker_configs", name); None for a key we do not own."""
        if not key.startswith(self.prefix):
            return None
        parts = key[len(self.prefix):].decode().split("/")
        if parts[0] in ("scram", "group_configs", "delegation_tokens") and len(parts) == 2:
            parts[1] = unquote(parts[1])
        return tuple(parts)
