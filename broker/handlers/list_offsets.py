"""ListOffsets v1-v7: earliest (-2), latest (-1), max timestamp (-3), or by timestamp.

By timestamp the answer is the first record whose timestamp is at or after the
target, found through the time index, and never at or beyond the high
watermark; no such record gives offset -1 and timestamp -1, as in Kafka.
"""

from __future__ import annotations

from wire.protocol import response_for

from broker.security.acl.checks import denied_names
from broker.security.acl.model import Operation, ResourceType
from broker.handlers.response_builder import NO_THROTTLE, error, make, nested

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


def _lookup(partition, timestamp: int, replica_id: int) -> tuple[str, int, int]:
    log = partition.log
    upper = log.log_end_offset if replica_id >= 0 else partition.high_watermark
    if timestamp == EARLIEST:
        return "none", -1, log.log_start_offset
    if timestamp == LATEST:
        return "none", -1, upper
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp()
    elif timestamp >= 0:
        found = log.offset_for_timestamp(timestamp)
    else:
        return "invalid_request", -1, -1
    if found is None or found[0] >= upper:
        return "none", -1, -1
    offset, ts = found
    return "none", ts, offset


async def handle(broker, header, request):
    cls = response_for(header)
    topic_cls = nested(cls, "ListOffsetsTopicResponse")
    part_cls = nested(cls, "ListOffsetsPartitionResponse")
    topics = []
    hidden = denied_names(broker, Operation.DESCRIBE, ResourceType.TOPIC, (t.name for t in request.topics))
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
                code, ts, offset = _lookup(partition, lp.timestamp, request.replica_id)
                leader_epoch = partition.leader_epoch
            parts.append(make(part_cls, partition_index=lp.partition_index, error_code=error(code),
                              timestamp=ts, offset=offset, leader_epoch=leader_epoch))
        topics.append(make(topic_cls, name=lt.name, partitions=tuple(parts)))
    return make(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
