"""ListOffsets v1-v10: earliest (-2), latest (-1), max timestamp (-3), or by timestamp.

v8 adds earliest local (-4, KIP-405) and v9 latest tiered (-5, KIP-1005). Without tiered
storage the local log is the whole log, so the earliest local offset is the log start, and
nothing is tiered: -5 finds no offset (-1), as Kafka answers with remote storage off. v10's
timeout bounds a broker's wait for remote-storage lookups; there are none here.

By timestamp the answer is the first record whose timestamp is at or after the
target, found through the time index, and never at or beyond what the asker may
read (the high watermark for a consumer, replica.Partition.fetch_offset_for_timestamp);
no such record gives offset -1 and timestamp -1, as in Kafka.
"""

from __future__ import annotations

from replica.readable_partition import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, FetchIsolation
from wire.protocol import response_for

from broker.security.acl.checks import denied_names
from broker.security.acl.model import Operation, ResourceType
from broker.handlers.response_builder import NO_THROTTLE, error, make, nested

EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
POSITIONS = (LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, MAX_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP, LATEST_TIERED_TIMESTAMP)


def _lookup(partition, timestamp: int, isolation: FetchIsolation) -> tuple[str, int, int]:
    """(error name, timestamp, offset)."""
    if timestamp < 0 and timestamp not in POSITIONS:
        return "invalid_request", -1, -1
    if timestamp == LATEST_TIERED_TIMESTAMP:
        return "none", -1, -1
    if timestamp == EARLIEST_LOCAL_TIMESTAMP:
        timestamp = EARLIEST_TIMESTAMP
    found = partition.fetch_offset_for_timestamp(timestamp, isolation)
    if found is None:
        return "none", -1, -1
    offset, ts = found
    return "none", ts, offset


async def handle(broker, header, request):
    cls = response_for(header)
    topic_cls = nested(cls, "ListOffsetsTopicResponse")
    part_cls = nested(cls, "ListOffsetsPartitionResponse")
    topics = []
    hidden = denied_names(broker, Operation.DESCRIBE, ResourceType.TOPIC, (t.name for t in request.topics))
    isolation = FetchIsolation.of(request.replica_id, getattr(request, "isolation_level", 0))  # v2+
    for lt in request.topics:
        parts = []
        for lp in lt.partitions:
            partition = broker.topics.partition(lt.name, lp.partition_index)
            epoch = getattr(lp, "current_leader_epoch", -1)
            if lt.name in hidden:  # ACLs: DESCRIBE on the topic, as Kafka's handleListOffsetRequest
                code, ts, offset, leader_epoch = "topic_authorization_failed", -1, -1, -1
            elif partition is None:
                code, ts, offset, leader_epoch = broker.topics.missing_partition_error(lt.name, lp.partition_index), -1, -1, -1
            elif partition.epoch_error(epoch) is not None:
                code, ts, offset, leader_epoch = partition.epoch_error(epoch), -1, -1, -1
            elif not partition.is_leader and request.replica_id < 0:
                code, ts, offset, leader_epoch = "not_leader_or_follower", -1, -1, -1
            else:
                code, ts, offset = _lookup(partition, lp.timestamp, isolation)
                leader_epoch = partition.leader_epoch
            parts.append(make(part_cls, partition_index=lp.partition_index, error_code=error(code),
                              timestamp=ts, offset=offset, leader_epoch=leader_epoch))
        topics.append(make(topic_cls, name=lt.name, partitions=tuple(parts)))
    return make(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
