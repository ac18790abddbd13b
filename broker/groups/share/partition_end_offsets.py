"""The end offsets the group coordinator needs for a share group's lag (KIP-1226; Kafka's
PartitionMetadataClient, NetworkPartitionMetadataClient): each partition's latest offset as its
leader answers ListOffsets for a consumer (timestamp LATEST, read_uncommitted: the high
watermark).

A partition led here is read in-process. One led by another broker is asked over the
inter-broker listener (one connection per broker, peer_connections.py), one ListOffsets per
leader for all of its partitions, the leaders asked concurrently, so a describe waits on the
network, never blocks the event loop. A partition with no leader, a leader that cannot be
reached (not registered, the connection fails or times out) or that answers an error has no end
offset (None): its lag is then unknown (-1), while the start offset is still answered. Kafka
answers such a partition with the lookup's error instead; -1 keeps the start offset visible to
the Java Admin, whose listShareGroupOffsets reads a -1 lag as "no lag".
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from wire.error_codes import ErrorCode
from replica.broker_connection import ConnectionFailed
from replica.readable_partition import LATEST_TIMESTAMP
from wire.protocol import request_class

from broker.api.response_builder import make, nested
from broker.api.topic_lookup import TopicLookup
from broker.cluster.peer_connections import PeerConnections
from broker.cluster.view import ClusterView

if TYPE_CHECKING:  # the etcd client it brings is loaded only by a clustered broker
    from broker.cluster.member import ClusterMember

log = logging.getLogger(__name__)

LIST_OFFSETS_KEY, LIST_OFFSETS_VERSION = 2, 7
CONSUMER_REPLICA_ID = -1  # answered as a consumer's: up to the high watermark
READ_UNCOMMITTED = 0
REQUEST_TIMEOUT_MS = 30_000  # Kafka's client's connection setup ceiling, its send thread's timeout

TopicPartition = tuple[str, int]


class PartitionEndOffsets:
    def __init__(self, topics: TopicLookup, view: ClusterView, node_id: int, member: ClusterMember | None) -> None:
        """`topics` and `view`: where each partition is led, `node_id` this broker's."""
        self._topics = topics
        self._view = view
        self._node_id = node_id
        self._peers = PeerConnections(member, node_id, "share-lag", REQUEST_TIMEOUT_MS) \
            if member is not None else None

    async def latest(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        """Each partition's end offset, None where its leader could not tell."""
        ends: dict[TopicPartition, int | None] = {}
        by_leader: dict[int, list[TopicPartition]] = {}
        for name, index in partitions:
            local = self._topics.partition(name, index)
            if local is not None and local.is_leader:
                ends[(name, index)] = local.high_watermark
                continue
            placement = self._view.placement(name, index, local)
            leader = placement.leader if placement is not None else -1
            if leader < 0 or leader == self._node_id or self._peers is None:
                ends[(name, index)] = None  # no leader now (or ours, not yet made leader here)
                continue
            by_leader.setdefault(leader, []).append((name, index))
        answers = await asyncio.gather(*(self._ask(node, asked) for node, asked in by_leader.items()))
        for answer in answers:
            ends.update(answer)
        return ends

    async def close(self) -> None:
        if self._peers is not None:
            await self._peers.close()

    async def _ask(self, node: int, partitions: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        ends: dict[TopicPartition, int | None] = dict.fromkeys(partitions)
        connection = self._peers.to(node) if self._peers is not None else None
        if connection is None:
            return ends
        try:
            response = await connection.request(_request(partitions))
        except ConnectionFailed as exc:
            log.info("asking broker %d for end offsets failed: %s", node, exc)
            return ends
        for topic in response.topics:
            for p in topic.partitions:
                if (topic.name, p.partition_index) in ends and p.error_code is ErrorCode.none and p.offset >= 0:
                    ends[(topic.name, p.partition_index)] = p.offset
        return ends


def _request(partitions: list[TopicPartition]) -> Any:
    cls = request_class(LIST_OFFSETS_KEY, LIST_OFFSETS_VERSION)
    by_topic: dict[str, list[int]] = {}
    for name, index in sorted(partitions):
        by_topic.setdefault(name, []).append(index)
    part_cls, topic_cls = nested(cls, "ListOffsetsPartition"), nested(cls, "ListOffsetsTopic")
    topics = tuple(make(topic_cls, name=name, partitions=tuple(
        make(part_cls, partition_index=i, current_leader_epoch=-1, timestamp=LATEST_TIMESTAMP) for i in indexes))
        for name, indexes in by_topic.items())
    return make(cls, replica_id=CONSUMER_REPLICA_ID, isolation_level=READ_UNCOMMITTED, topics=topics)
