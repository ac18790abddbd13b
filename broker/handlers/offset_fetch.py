"""OffsetFetch v1+: committed offsets of one group (v1-v7) or of several (v8+).

A partition without a committed offset answers -1 and no error, as Kafka does; null topics
(v2+) mean every partition the group has committed.
"""

from __future__ import annotations

from wire.protocol import response_for

from ..groups import offsets
from .response_builder import NO_THROTTLE, error, make, nested


def _topics(broker, cls, topic_name: str, part_name: str, group_id: str, topics):
    topic_cls, part_cls = nested(cls, topic_name), nested(cls, part_name)
    wanted = None if topics is None else [(t.name, list(t.partition_indexes)) for t in topics]
    out = []
    for topic, partitions in offsets.fetch(broker.groups, group_id, wanted):
        parts = []
        for index, committed in partitions:
            parts.append(make(
                part_cls, partition_index=index,
                committed_offset=committed.offset if committed else -1,
                committed_leader_epoch=committed.leader_epoch if committed else -1,
                metadata=committed.metadata if committed else "", error_code=error("none"),
            ))
        out.append(make(topic_cls, name=topic, partitions=tuple(parts)))
    return tuple(out)


async def handle(broker, header, request):
    cls = response_for(header)
    if header.api_version < 8:
        topics = _topics(broker, cls, "OffsetFetchResponseTopic", "OffsetFetchResponsePartition",
                         request.group_id, request.topics)
        return make(cls, throttle_time=NO_THROTTLE, topics=topics, error_code=error("none"))
    group_cls = nested(cls, "OffsetFetchResponseGroup")
    groups = tuple(
        make(group_cls, group_id=g.group_id, error_code=error("none"),
             topics=_topics(broker, cls, "OffsetFetchResponseTopics", "OffsetFetchResponsePartitions",
                            g.group_id, g.topics))
        for g in request.groups
    )
    return make(cls, throttle_time=NO_THROTTLE, groups=groups)
