"""ListOffsets v1-v11: earliest (-2), latest (-1), max timestamp (-3), or by timestamp.

v8 adds earliest local (-4, KIP-405), v9 latest tiered (-5, KIP-1005) and v11 earliest pending
upload (-6, KIP-1023: the first offset not yet copied to remote storage). Without tiered
storage the local log is the whole log, so the earliest local offset is the log start, and
nothing is tiered or waits to be: -5 and -6 find no offset (-1, leader epoch -1), as Kafka's
UnifiedLog answers with remote storage off. v10's timeout bounds a broker's wait for
remote-storage lookups; there are none here. v11 changes no field: it is the version that
may ask for -6.

A position asked for below the version that brought it, or a negative timestamp that is no
position, answers UNSUPPORTED_VERSION on that partition before anything else is looked up,
as Kafka's ReplicaManager.fetchOffset (isListOffsetsTimestampUnsupported).

By timestamp the answer is the first record whose timestamp is at or after the
target, found through the time index, and never at or beyond what the asker may
read (the high watermark for a consumer, replica.Partition.fetch_offset_for_timestamp);
no such record gives offset -1 and timestamp -1, as in Kafka.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from replica.readable_partition import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, FetchIsolation, \
    ReadablePartition
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested

EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6
# each position and the first version that may ask for it (Kafka's timestampMinSupportedVersion)
POSITIONS = {LATEST_TIMESTAMP: 1, EARLIEST_TIMESTAMP: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL_TIMESTAMP: 8,
             LATEST_TIERED_TIMESTAMP: 9, EARLIEST_PENDING_UPLOAD_TIMESTAMP: 11}
NOTHING_TIERED = (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP)


def unsupported(timestamp: int, version: int) -> bool:
    """A negative timestamp that is no position, or a position newer than the request's version."""
    if timestamp >= 0:
        return False
    first = POSITIONS.get(timestamp)
    return first is None or version < first


def _lookup(partition: ReadablePartition, timestamp: int, isolation: FetchIsolation) -> tuple[int, int, int]:
    """(timestamp, offset, leader epoch)."""
    if timestamp in NOTHING_TIERED:
        return -1, -1, -1
    if timestamp == EARLIEST_LOCAL_TIMESTAMP:
        timestamp = EARLIEST_TIMESTAMP
    found = partition.fetch_offset_for_timestamp(timestamp, isolation)
    if found is None:
        return -1, -1, partition.leader_epoch
    offset, ts = found
    return ts, offset, partition.leader_epoch


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    topic_cls = nested(cls, "ListOffsetsTopicResponse")
    part_cls = nested(cls, "ListOffsetsPartitionResponse")
    topics = []
    hidden = ctx.authorizer.denied_names(Operation.DESCRIBE, ResourceType.TOPIC, (t.name for t in request.topics))
    isolation = FetchIsolation.of(request.replica_id, getattr(request, "isolation_level", 0))  # v2+
    for lt in request.topics:
        parts = []
        for lp in lt.partitions:
            partition = ctx.topics.partition(lt.name, lp.partition_index)
            epoch = getattr(lp, "current_leader_epoch", -1)
            if lt.name in hidden:  # ACLs: DESCRIBE on the topic, as Kafka's handleListOffsetRequest
                code, ts, offset, leader_epoch = ErrorCode.topic_authorization_failed, -1, -1, -1
            elif unsupported(lp.timestamp, header.api_version):
                code, ts, offset, leader_epoch = ErrorCode.unsupported_version, -1, -1, -1
            elif partition is None:
                code, ts, offset, leader_epoch = \
                    ctx.topics.missing_partition_error(lt.name, lp.partition_index), -1, -1, -1
            elif (fenced := partition.epoch_error(epoch)) is not None:
                code, ts, offset, leader_epoch = fenced, -1, -1, -1
            elif not partition.is_leader and request.replica_id < 0:
                code, ts, offset, leader_epoch = ErrorCode.not_leader_or_follower, -1, -1, -1
            else:
                code, (ts, offset, leader_epoch) = ErrorCode.none, _lookup(partition, lp.timestamp, isolation)
            parts.append(make(part_cls, partition_index=lp.partition_index, error_code=code,
                              timestamp=ts, offset=offset, leader_epoch=leader_epoch))
        topics.append(make(topic_cls, name=lt.name, partitions=tuple(parts)))
    return make(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
