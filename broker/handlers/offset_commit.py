"""OffsetCommit v2+: checked against the group's generation, then written to __consumer_offsets."""

from __future__ import annotations

from wire.protocol import response_for

from ..groups import offsets
from .response_builder import NO_THROTTLE, error, make, nested


async def handle(broker, header, request):
    cls = response_for(header)
    topic_cls = nested(cls, "OffsetCommitResponseTopic")
    part_cls = nested(cls, "OffsetCommitResponsePartition")
    wanted = [
        offsets.OffsetToCommit(t.name, p.partition_index, p.committed_offset,
                               getattr(p, "committed_leader_epoch", -1), p.committed_metadata)
        for t in request.topics for p in t.partitions
    ]
    codes = iter(await offsets.commit(
        broker.groups, broker, request.group_id, request.generation_id_or_member_epoch,
        request.member_id, getattr(request, "group_instance_id", None), wanted,
    ))
    topics = tuple(
        make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=p.partition_index, error_code=error(next(codes)))
            for p in t.partitions))
        for t in request.topics
    )
    return make(cls, throttle_time=NO_THROTTLE, topics=topics)
