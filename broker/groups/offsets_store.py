"""Where `__consumer_offsets` records go and come back from: the topic itself, on the normal engine.

The topic is created the first time a group needs it (Kafka does the same on the first
FindCoordinator), with `offsets.topic.num.partitions` partitions, no time retention and
100 MiB segments (Kafka's offsets.topic.segment.bytes). It is marked cleanup.policy=compact
like Kafka's; this broker does not compact yet, so the log keeps every commit and start-up
replays all of them (the latest value per key wins). A batch replay cannot read is skipped with
a warning naming its partition and offsets: one bad batch must not keep the broker from starting,
nor hide the groups whose records follow it.
"""

from __future__ import annotations

import logging
from typing import Iterator, NamedTuple

from wire.batch_builder import build_batch
from wire.record_batch import BatchHeader, iter_batches, parse_header
from wire.records import InvalidRecords, iter_records

from replica.partition import Partition, now_ms
from . import offsets_log

log = logging.getLogger(__name__)

TOPIC_CONFIGS = {"cleanup.policy": "compact", "retention.ms": "-1", "segment.bytes": str(100 * 1024 * 1024)}
_READ_CHUNK = 4 * 1024 * 1024


class StoredRecord(NamedTuple):
    partition: int
    offset: int
    key: bytes
    value: bytes | None


class OffsetsStore:
    def __init__(self, broker, partitions: int) -> None:
        self._broker = broker
        self._partitions = partitions

    def _topic(self):
        topic = self._broker.topics.get(offsets_log.TOPIC)
        if topic is None:
            topic = self._broker.topics.create(offsets_log.TOPIC, self._partitions, TOPIC_CONFIGS)
        return topic

    def ensure_topic(self) -> None:
        self._topic()

    def partition_for(self, group_id: str) -> Partition:
        topic = self._topic()
        # An existing topic keeps the partition count it was created with.
        return topic.partitions[offsets_log.partition_for(group_id, len(topic.partitions))]

    async def append(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> None:
        """Write one batch of a group's records; returns once it is as durable as the topic asks."""
        partition = self.partition_for(group_id)
        batch = build_batch(records, now_ms())
        partition.append_as_leader(batch, parse_header(batch), acks=1)
        partition.publish()
        if partition.config.flush_messages:
            await self._broker.durable(partition)

    def replay(self) -> Iterator[StoredRecord]:
        """Every keyed record, in log order per partition."""
        topic = self._broker.topics.get(offsets_log.TOPIC)
        if topic is None:
            return
        for partition in topic.partitions:
            yield from self._replay_partition(partition)

    def _replay_partition(self, partition: Partition) -> Iterator[StoredRecord]:
        log_ = partition.log
        offset, end = log_.log_start_offset, log_.log_end_offset
        while offset < end:
            regions = log_.read(offset, _READ_CHUNK, end)
            if not regions:
                break
            for region in regions:
                data = log_.read_bytes(region)
                for pos, header in iter_batches(data):
                    yield from _batch_records(partition.index, memoryview(data)[pos:pos + header.size],
                                              header, offset)
                    offset = header.last_offset + 1


def _batch_records(partition: int, batch: memoryview, header: BatchHeader, from_offset: int) -> list[StoredRecord]:
    """The batch's keyed records at or after `from_offset`, or none if any record is unreadable.

    The whole batch is decoded before any record is applied: a commit is one batch (append
    above), and half of one must not be replayed. InvalidRecords is everything iter_records
    raises (hostile lengths, codecs that fail, a wrong magic).
    """
    try:
        return [StoredRecord(partition, r.offset, r.key, r.value) for r in iter_records(batch)
                if r.key is not None and r.offset >= from_offset]
    except InvalidRecords as exc:
        log.warning("skipping unreadable %s batch in partition %d at offsets %d-%d: %s",
                    offsets_log.TOPIC, partition, header.base_offset, header.last_offset, exc)
        return []
