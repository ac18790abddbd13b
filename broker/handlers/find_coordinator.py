"""FindCoordinator: the coordinator of a group is the leader of its `__consumer_offsets`
partition, the coordinator of a transactional id the leader of its `__transaction_state` partition,
and the share coordinator of a share-partition (key type 2, v6+: "group:topicId:partition") the
leader of its `__share_group_state` partition.

The topic is created on the first lookup, as Kafka does (offsets_store / txn state_store: through
etcd in a cluster). The answer is that partition's leader in this broker's metadata: one broker
leads everything; in a cluster, while the partition has no leader (being created, or its ISR all
gone) the answer is COORDINATOR_NOT_AVAILABLE and the client asks again. The named broker may
see the new leadership a moment later than we do: until it has loaded the partition it answers
NOT_COORDINATOR, and the client looks up the coordinator again.

v0-v3 ask for one key, v4+ for a batch. ACLs as Kafka's handleFindCoordinatorRequest: DESCRIBE
on the group, or on the transactional id; CLUSTER_ACTION for a share-partition (only brokers ask).
A share key that does not parse is INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Callable

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.coordinator_topics import CoordinatorKind
from broker.net import advertised_brokers
from broker.groups import offsets_log
from broker.groups.share import state_log
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.txn import txn_log

SHARE_KEY_MIN_VERSION = 6
Found = tuple[ErrorCode, str | None, int, str, int]  # (error, message, node id, host, port)
_NOT_AVAILABLE: Found = (ErrorCode.coordinator_not_available, None, -1, "", -1)


async def _answer(ctx: ApiContext, key_type: int, key: str, version: int) -> Found:
    partition_for: Callable[[str, int], int]  # the key's partition of the topic, by partition count
    if key_type == CoordinatorKind.GROUP:
        if not ctx.authorizer.group_allowed(Operation.DESCRIBE, key):
            return ErrorCode.group_authorization_failed, "Group authorization failed.", -1, "", -1
        topic_name, partition_for = offsets_log.TOPIC, offsets_log.partition_for
    elif key_type == CoordinatorKind.TRANSACTION:
        if not ctx.authorizer.allowed(Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
            return ErrorCode.transactional_id_authorization_failed, "Transactional Id authorization failed.", -1, "", -1
        topic_name, partition_for = txn_log.TOPIC, txn_log.partition_for
    elif key_type == CoordinatorKind.SHARE and version >= SHARE_KEY_MIN_VERSION:
        if not ctx.authorizer.cluster_allowed(Operation.CLUSTER_ACTION):
            return ErrorCode.cluster_authorization_failed, "Cluster authorization failed.", -1, "", -1
        if not state_log.is_coordinator_key(key):
            return ErrorCode.invalid_request, f"{key!r} is not a share-partition key (group:topicId:partition)", -1, "", -1
        topic_name, partition_for = state_log.TOPIC, state_log.partition_for
    else:
        return ErrorCode.invalid_request, f"unknown coordinator key type {key_type} in v{version}", -1, "", -1
    topic = await ctx.coordinator_topics[CoordinatorKind(key_type)].ensure_topic()
    if topic is None:
        return _NOT_AVAILABLE
    index = partition_for(key, len(topic.partitions))
    placement = ctx.view.placement(topic_name, index, topic.partitions[index])
    leader = advertised_brokers.broker_address(ctx.view, placement.leader) if placement is not None and placement.leader >= 0 else None
    if leader is None:
        return _NOT_AVAILABLE
    return ErrorCode.none, None, leader.node_id, leader.host, leader.port


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    key_type = getattr(request, "key_type", CoordinatorKind.GROUP)
    if header.api_version >= 4:
        coordinator_cls = nested(cls, "Coordinator")
        coordinators = []
        for key in request.coordinator_keys:
            code, message, node, host, port = await _answer(ctx, key_type, key, header.api_version)
            coordinators.append(make(coordinator_cls, key=key, node_id=node, host=host, port=port,
                                     error_code=code, error_message=message))
        return make(cls, throttle_time=NO_THROTTLE, coordinators=tuple(coordinators))
    code, message, node, host, port = await _answer(ctx, key_type, request.key, header.api_version)
    return make(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=message,
                node_id=node, host=host, port=port)
