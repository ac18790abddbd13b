"""OffsetForLeaderEpoch v2-v4: where a leader epoch ends in the leader's log (KIP-101/KIP-279).

Followers ask it before fetching, to cut a tail the leader never had; the Java client and
librdkafka ask it after a leader change, to detect that records they read were truncated.
Kafka's answer (Partition.lastOffsetForLeaderEpoch): only the leader answers
(NOT_LEADER_OR_FOLLOWER otherwise; v3+ carries the asking replica id, -1 for clients); a
current_leader_epoch older than the partition's is FENCED_LEADER_EPOCH, a newer one
UNKNOWN_LEADER_EPOCH; then the largest epoch <= the requested one that the log knows and the
offset where it ends: the start of the next epoch, or the log end for the latest. An epoch
below every known one is answered (-1, -1), UNDEFINED, with no error.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from replica.partition import Partition

from broker.api.context import Answer, ApiContext, Request
from broker.api.topic_lookup import TopicLookup
from broker.api.access_checks import AccessChecks
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested


def _end_offset(topics: TopicLookup, topic: str, index: int, current_epoch: int,
                epoch: int) -> tuple[ErrorCode, int, int]:
    partition = topics.partition(topic, index)
    if partition is None:
        return topics.missing_partition_error(topic, index), -1, -1
    if not isinstance(partition, Partition):  # a read-only view (readable_partition.py), which owns no log
        return ErrorCode.invalid_topic_exception, -1, -1
    fenced = partition.epoch_error(current_epoch)
    if fenced is not None:
        return fenced, -1, -1
    if not partition.is_leader:
        return ErrorCode.not_leader_or_follower, -1, -1
    found_epoch, end = partition.end_offset_for(epoch)
    return ErrorCode.none, found_epoch, end


def _refused(authorizer: AccessChecks, request: Request) -> frozenset[str]:
    """ACLs, as Kafka's handleOffsetForLeaderEpochRequest: a follower needs CLUSTER_ACTION on the
    cluster, a client DESCRIBE on each topic."""
    names: list[str] = [t.topic for t in request.topics]
    if getattr(request, "replica_id", -1) >= 0:
        return frozenset() if authorizer.cluster_allowed(Operation.CLUSTER_ACTION) else frozenset(names)
    return authorizer.denied_names(Operation.DESCRIBE, ResourceType.TOPIC, names)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    topic_cls = nested(cls, "OffsetForLeaderTopicResult")
    part_cls = nested(cls, "EpochEndOffset")
    topics = []
    refused = _refused(ctx.authorizer, request)
    for t in request.topics:
        parts = []
        for p in t.partitions:
            if t.topic in refused:
                code, epoch, end = ErrorCode.topic_authorization_failed, -1, -1
            else:
                code, epoch, end = _end_offset(ctx.topics, t.topic, p.partition, p.current_leader_epoch, p.leader_epoch)
            parts.append(make(part_cls, error_code=code, partition=p.partition, leader_epoch=epoch,
                              end_offset=end))
        topics.append(make(topic_cls, topic=t.topic, partitions=tuple(parts)))
    return make(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
