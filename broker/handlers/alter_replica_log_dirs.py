"""AlterReplicaLogDirs v1-v2: move partitions' replicas on this broker to another log dir,
here the other storage layout's (broker/storage/log_dir_move.py does the move).

The answer comes at once, as Kafka's ReplicaManager.alterReplicaLogDirs: NONE means the move
started (or the replica is already there); DescribeLogDirs shows the future replica until it
is swapped in. Errors as Kafka answers them: CLUSTER_AUTHORIZATION_FAILED for every partition
without ALTER on the cluster; LOG_DIR_NOT_FOUND for a path that is not one of this broker's
log dirs (compared as absolute paths); INVALID_REPLICA_ASSIGNMENT for a dir this broker's
cordoned.log.dirs names (KIP-1066: it takes no new replica); UNKNOWN_TOPIC_OR_PARTITION for a partition no topic has;
REPLICA_NOT_AVAILABLE for one hosted on other brokers only (Kafka keeps that code here for
NOT_LEADER_OR_FOLLOWER). In a cluster the Admin client sends the request to the broker holding
the replica, as Kafka's does; that broker moves its own replica, leader or follower, and
records the new layout in its own topics.json (broker/storage/replica_layouts.py).
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.replica_service import ReplicaService
from broker.api.topic_lookup import TopicLookup
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested


def _answer(topics: TopicLookup, replicas: ReplicaService, mode: str | None, name: str, index: int) -> ErrorCode:
    if mode is None:
        return ErrorCode.log_dir_not_found
    if mode in replicas.cordoned_log_dirs():
        return ErrorCode.invalid_replica_assignment
    topic = topics.topics.get(name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return ErrorCode.unknown_topic_or_partition
    if topic.partitions[index] is None:
        return ErrorCode.replica_not_available
    replicas.move_replica(topic, index, mode)
    return ErrorCode.none


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    topic_cls, part_cls = nested(cls, "AlterReplicaLogDirTopicResult"), nested(cls, "AlterReplicaLogDirPartitionResult")
    allowed = ctx.authorizer.cluster_allowed(Operation.ALTER)  # as Kafka's handleAlterReplicaLogDirsRequest
    answers: dict[str, dict[int, ErrorCode]] = {}
    for wanted in request.dirs:
        mode = ctx.replicas.log_dir_mode(wanted.path)
        for t in wanted.topics:
            for index in t.partitions:
                answers.setdefault(t.name, {})[index] = (_answer(ctx.topics, ctx.replicas, mode, t.name, index)
                                                         if allowed else ErrorCode.cluster_authorization_failed)
    results = tuple(
        make(topic_cls, topic_name=name, partitions=tuple(
            make(part_cls, partition_index=index, error_code=code) for index, code in partitions.items()))
        for name, partitions in answers.items())
    return make(cls, throttle_time=NO_THROTTLE, results=results)
