"""Appending transaction markers to partitions this broker leads, and waiting until they are
replicated: what WriteTxnMarkers does for a remote coordinator and what a local coordinator
calls directly.

The markers go through the write path (replica/write_path.py), all of one call together, so
they share one group commit: NOT_LEADER_OR_FOLLOWER where this broker does not lead,
INVALID_PRODUCER_EPOCH for an epoch older than the producer's, TRANSACTION_COORDINATOR_FENCED
for an older coordinator epoch. Each is answered as Kafka's coordinator appends it: with
acks=all, once the high watermark passes it (and after the fsync flush.messages asks for),
because the coordinator counts a transaction complete only when every marker is replicated. A
replicated marker in a topic some coordinator keeps transactional state in is told to that
topic's listener, handed in at wiring (the groups end the producer's pending transactional
offsets in `__consumer_offsets`, Kafka's onTransactionCompleted), so txn/ need not know who
listens.
"""

from __future__ import annotations

from typing import Callable, Mapping, NamedTuple

from wire.error_codes import ErrorCode

from replica.partition import Partition
from replica.write_path import MarkerWrite, WritePath

from broker.api.topic_lookup import TopicLookup

MARKER_TIMEOUT_S = 30.0  # Kafka's request.timeout.ms, which its coordinator's marker appends wait

# (partition index, producer id, the marker's offset, commit): a replicated marker, to its topic's
# listener
MarkerListener = Callable[[int, int, int, bool], None]


class Marker(NamedTuple):
    topic: str
    partition_index: int  # not `index`: a tuple's method
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool


class MarkerAppender:
    def __init__(self, topics: TopicLookup, write_path: WritePath, listeners: Mapping[str, MarkerListener]) -> None:
        self._topics = topics
        self._write_path = write_path
        self._listeners = listeners  # topic -> what a replicated marker there ends

    async def append(self, markers: list[Marker]) -> list[ErrorCode]:
        """Each marker in its partition; returns an error code per marker (none once replicated)."""
        topics = self._topics
        codes: list[ErrorCode | None] = []
        writes = []
        for m in markers:
            partition = topics.partition(m.topic, m.partition_index)
            if topics.get(m.topic) is None or partition is None:
                codes.append(topics.missing_partition_error(m.topic, m.partition_index))
            elif not isinstance(partition, Partition):  # a read-only view (readable_partition.py), which owns no log
                codes.append(ErrorCode.invalid_topic_exception)
            else:
                codes.append(None)
                writes.append(MarkerWrite(partition, m.producer_id, m.producer_epoch, m.coordinator_epoch, m.commit))
        results = iter(await self._write_path.append_records(writes, acks=-1, timeout_s=MARKER_TIMEOUT_S))
        answered: list[ErrorCode] = []
        for code, m in zip(codes, markers):
            if code is None:
                result = next(results)
                code = result.error
                listener = self._listeners.get(m.topic)
                if result.ok and result.info is not None and listener is not None:
                    listener(m.partition_index, m.producer_id, result.info.first_offset, m.commit)
            answered.append(code)
        return answered
