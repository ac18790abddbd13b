"""What the console shows, copied from the broker on its event loop.

The console is served by the metrics port's HTTP threads (metrics_http.py), and the partitions,
groups and stores are changed by the event loop only: like a Prometheus scrape, each request
hops to the loop (loop_read.py) and copies plain values there, in slices of
metrics_collector.CHUNK partitions that yield the loop in between, and gives up after
SNAPSHOT_TIMEOUT_S instead of holding an HTTP thread on a stuck loop. The offsets, sizes and
group lag come from metrics_collector.take_snapshot itself, so the page and /metrics never
disagree; this module adds who leads each partition and its replicas and ISR (from the
cluster view Metadata answers from), the key lookup, every member of the cluster with the
partitions it holds and leads (the same view: a cluster shows every member, not only this one),
the ACL bindings, each group's total lag for the lag chart, and what the login checks (the SASL
users' stores; a SCRAM password is hashed by the caller, off the loop).

A key lookup reads the commitlog's key index through segment/rocket/key_lookup.py, the path the
key-lookup topics (key_topic.py) serve Fetch from; it answers at most MAX_LOOKUP_RECORDS
records (the first ones in (partition, offset) order) and says when it cut the rest. The
brokers and ACLs answers are bounded too: at most MAX_PARTITIONS_LISTED partitions per broker
and MAX_ACLS_LISTED bindings, with counts of all and a flag saying when the list was cut.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from segment.rocket.key_lookup import lookup_key
from segment.rocket.store import RocketLogStore
from wire.scram import SCRAM_MECHANISMS

from broker.api.context import ApiContext
from broker.api.security_service import AclAdmin, ScramAdmin
from broker.api.topic_lookup import TopicLookup
from broker.cluster.view import ClusterView
from broker.observability.console.login import Credentials
from broker.observability.metrics_collector import CHUNK, StateSources, take_snapshot
from broker.security.acl.model import AclFilter, Operation, PatternType, Permission, ResourceType
from broker.security.sasl_credentials import PlainUsers
from broker.storage.log_dir_move import LogDirMoves
from broker.storage.modes import StorageModes

MAX_LOOKUP_RECORDS = 500
MAX_PARTITIONS_LISTED = 2000
MAX_ACLS_LISTED = 2000
_EVERY_ACL = AclFilter(ResourceType.ANY, None, PatternType.ANY, None, None, Operation.ANY, Permission.ANY)


class SaslUsers(Protocol):
    """The SASL users a console login is checked against (BrokerSecurity, broker/security/authentication.py)."""

    @property
    def plain_users(self) -> PlainUsers: ...

    @property
    def scram(self) -> ScramAdmin: ...


@dataclass(frozen=True)
class ConsoleSources:
    """What the console reads and changes; Broker (broker/broker.py) gives its own services.
    `api`: the handlers' services (the console changes topic configs through their handlers);
    `state`: what a metrics snapshot reads, so the page and /metrics never disagree."""
    api: ApiContext
    state: StateSources
    log_dirs: LogDirMoves  # a partition's move to another layout, shown until its swap
    users: SaslUsers


class RequestRefused(Exception):
    """A console request that cannot be answered: `status` is the HTTP status to give."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def partition_rows(sources: ConsoleSources) -> list[dict[str, Any]]:
    """One row per partition hosted here, in (topic, partition) order."""
    snap = await take_snapshot(sources.state)
    topics, view = sources.api.topics, sources.api.view
    rows = []
    for i, (topic, index, leo, hw, log_start, size, *_counts) in enumerate(snap.partitions):
        if i and i % CHUNK == 0:
            await asyncio.sleep(0)
        local = topics.partition(topic, index)
        placement = view.placement(topic, index, local) if local is not None else None
        held = topics.topics.get(topic)
        # What this broker holds: a replica's layout is its broker's (replica_layouts.py), and a
        # live move's target shows until the swap
        future = sources.log_dirs.future(topic, index)
        rows.append({
            "topic": topic, "partition": index, "layout": held.mode_of(index) if held else None,
            "moving_to": future.target_mode if future is not None else None, "log_end_offset": leo,
            "high_watermark": hw, "log_start_offset": log_start, "size_bytes": size,
            "leader": placement.leader if placement else None,
            "replicas": list(placement.replicas) if placement else [],
            "isr": list(placement.isr) if placement else [],
        })
    rows.sort(key=lambda r: (r["topic"], r["partition"]))
    return rows


async def group_rows(state: StateSources) -> list[dict[str, Any]]:
    """One row per committed offset of the groups coordinated here; lag is None where the
    partition is not hosted here (its HW is another broker's)."""
    snap = await take_snapshot(state)
    rows: list[dict[str, Any]] = [{"group": group, "topic": topic, "partition": index, "committed": committed,
             "lag": None if hw is None else hw - committed}
            for group, topic, index, committed, hw in snap.offsets]
    rows.sort(key=lambda r: (r["group"], r["topic"], r["partition"]))
    return rows


@dataclass(frozen=True)
class LookupAnswer:
    records: list[dict[str, Any]]
    truncated: bool


async def lookup(topics: TopicLookup, storage: StorageModes, topic: str, key: bytes) -> LookupAnswer:
    """The records of `topic` with `key`, from the partitions hosted here."""
    source = topics.topics.get(topic)
    if source is None:
        raise RequestRefused(404, f"unknown topic {topic!r}")
    if source.storage_mode != "commitlog":
        raise RequestRefused(400, f"topic {topic!r} uses storage.mode={source.storage_mode}: key lookup needs a "
                                 "topic created with storage.mode=commitlog (the layout with a key index)")
    store = storage.store("commitlog")
    assert isinstance(store, RocketLogStore)  # the commitlog layout's store is RocketMQ's
    hits = lookup_key(store, topic, key)
    return LookupAnswer([{
        "partition": h.partition, "offset": h.offset, "timestamp": h.timestamp,
        "value": None if h.value is None else h.value.decode("utf-8", "backslashreplace"),
        "headers": [[name, None if v is None else v.decode("utf-8", "backslashreplace")] for name, v in h.headers],
    } for h in hits[:MAX_LOOKUP_RECORDS]], len(hits) > MAX_LOOKUP_RECORDS)


async def group_lag_totals(state: StateSources) -> dict[str, int]:
    """{group: records behind} over the partitions hosted here: the lag chart's samples."""
    totals: dict[str, int] = {}
    for row in await group_rows(state):
        if row["lag"] is not None:
            totals[row["group"]] = totals.get(row["group"], 0) + max(0, row["lag"])
    return totals


async def sasl_users_exist(users: SaslUsers) -> bool:
    """Whether the broker has SASL users (PLAIN or SCRAM): the console then needs a login."""
    return len(users.plain_users) > 0 or bool(users.scram.describe())


async def credentials_of(users: SaslUsers, user: str, password: str) -> Credentials:
    """What the broker keeps for `user`; the SCRAM hashing is left to the caller's thread."""
    scram = tuple((m, c) for m in SCRAM_MECHANISMS if (c := users.scram.get(user, m)) is not None)
    return Credentials(users.plain_users.password_ok(user, password), scram)


async def broker_rows(view: ClusterView, topics: TopicLookup, node_id: int) -> dict[str, Any]:
    """{controller_id, this_broker, brokers: [{node_id, host, port, replicas, leaders,
    partitions: [{topic, partition, leader, in_isr}], truncated}]}"""
    rows: dict[int, dict[str, Any]] = {
        b.node_id: {"node_id": b.node_id, "host": b.host, "port": b.port, "replicas": 0, "leaders": 0,
                    "partitions": [], "truncated": False} for b in view.brokers()}
    seen = 0
    for topic in list(topics.topics.values()):
        for index, local in enumerate(list(topic.partitions)):
            seen += 1
            if seen % CHUNK == 0:
                await asyncio.sleep(0)
            placement = view.placement(topic.name, index, local)
            if placement is None:
                continue  # created in etcd, not yet in this broker's image
            for node in placement.replicas:
                row = rows.get(node)
                if row is None:  # a replica on a broker that is not registered now
                    continue
                row["replicas"] += 1
                row["leaders"] += placement.leader == node
                if len(row["partitions"]) < MAX_PARTITIONS_LISTED:
                    row["partitions"].append({"topic": topic.name, "partition": index,
                                              "leader": placement.leader == node, "in_isr": node in placement.isr})
                else:
                    row["truncated"] = True
    for row in rows.values():
        row["partitions"].sort(key=lambda p: (p["topic"], p["partition"]))
    return {"controller_id": view.controller_id, "this_broker": node_id,
            "brokers": [rows[n] for n in sorted(rows)]}


async def acl_rows(store: AclAdmin | None) -> dict[str, Any]:
    """{authorizer: bool, acls: [{resource_type, resource_name, pattern_type, principal, host,
    operation, permission}], total, truncated}"""
    if store is None:
        return {"authorizer": False, "acls": [], "total": 0, "truncated": False}
    bindings = store.describe(_EVERY_ACL)
    return {"authorizer": True, "acls": [b.to_json() for b in bindings[:MAX_ACLS_LISTED]],
            "total": len(bindings), "truncated": len(bindings) > MAX_ACLS_LISTED}
