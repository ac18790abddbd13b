"""The console's brokers and ACLs views, copied on the event loop as broker_state.py copies
partitions: every member of the cluster with the partitions it holds and leads (from the same
cluster view Metadata answers from, so a cluster shows every member, not only this one), and
the ACL bindings the authorizer holds.

Answers are bounded: at most MAX_PARTITIONS_LISTED partitions per broker and MAX_ACLS_LISTED
bindings are listed, with counts of all and a flag saying when the list was cut.
"""

from __future__ import annotations

import asyncio

from broker.observability.metrics_collector import CHUNK
from broker.security.acl.model import AclFilter, Operation, PatternType, Permission, ResourceType

MAX_PARTITIONS_LISTED = 2000
MAX_ACLS_LISTED = 2000
_EVERY_ACL = AclFilter(ResourceType.ANY, None, PatternType.ANY, None, None, Operation.ANY, Permission.ANY)


async def broker_rows(broker) -> dict:
    """{controller_id, this_broker, brokers: [{node_id, host, port, replicas, leaders,
    partitions: [{topic, partition, leader, in_isr}], truncated}]}"""
    view = broker.view
    rows = {b.node_id: {"node_id": b.node_id, "host": b.host, "port": b.port, "replicas": 0, "leaders": 0,
                        "partitions": [], "truncated": False} for b in view.brokers()}
    seen = 0
    for topic in list(broker.topics.topics.values()):
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
    return {"controller_id": view.controller_id, "this_broker": broker.config.node_id,
            "brokers": [rows[n] for n in sorted(rows)]}


async def acl_rows(broker) -> dict:
    """{authorizer: bool, acls: [{resource_type, resource_name, pattern_type, principal, host,
    operation, permission}], total, truncated}"""
    store = broker.acls
    if store is None:
        return {"authorizer": False, "acls": [], "total": 0, "truncated": False}
    bindings = store.describe(_EVERY_ACL)
    return {"authorizer": True, "acls": [b.to_json() for b in bindings[:MAX_ACLS_LISTED]],
            "total": len(bindings), "truncated": len(bindings) > MAX_ACLS_LISTED}
