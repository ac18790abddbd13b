"""Offsets a transaction wrote but has not ended: Kafka's pending transactional offset commits.

TxnOffsetCommit (txn_offsets.py) writes a group's offsets to `__consumer_offsets` in a
transactional batch of the producer. Until that producer's COMMIT or ABORT marker is written to
the same partition they are pending: OffsetFetch does not return them, and answers
UNSTABLE_OFFSET_COMMIT for their partitions to a client asking for stable offsets (KIP-447).
The marker decides:

- COMMIT: each pending offset becomes the group's committed one, unless the committed one's
  record lies later in the log (a plain OffsetCommit written after the transactional one wins).
  Kafka's rule, by record offset (GroupMetadata.completePendingTxnOffsetCommit, and
  OffsetMetadataManager.replayEndTransactionMarker in its new coordinator): the log's order is
  the order a replay applies records in, so the live state and a replay agree.
- ABORT: they are dropped.

A producer committing the same partition twice in one transaction keeps the later value; a
tombstone of a partition (OffsetDelete, DeleteGroups) drops its pending offsets too, as
Kafka's replay of a tombstone does. The same rules run live, when a marker is written through
broker/txn/marker_append.py, and when a partition's log is replayed (offsets_replay.load).
"""

from __future__ import annotations

from broker.groups.committed_offset import CommittedOffset

TopicPartition = tuple[str, int]


def keep_later(committed: dict[TopicPartition, CommittedOffset], partition: TopicPartition,
               value: CommittedOffset) -> None:
    """`value` becomes the partition's committed offset unless the current one's record is later.
    A current one not written yet (record_offset -1: a commit replayed before its write,
    offset_ops.py) is the latest: its record will follow every one in the log."""
    current = committed.get(partition)
    if current is None or 0 <= current.record_offset < value.record_offset:
        committed[partition] = value


class PendingTxnOffsets:
    def __init__(self) -> None:
        self._by_producer: dict[int, dict[TopicPartition, CommittedOffset]] = {}

    def add(self, producer_id: int, partition: TopicPartition, value: CommittedOffset) -> None:
        self._by_producer.setdefault(producer_id, {})[partition] = value

    def get(self, producer_id: int, partition: TopicPartition) -> CommittedOffset | None:
        return self._by_producer.get(producer_id, {}).get(partition)

    def has_producer(self, producer_id: int) -> bool:
        return producer_id in self._by_producer

    def is_pending(self, partition: TopicPartition) -> bool:
        """Whether some open transaction wrote an offset for the partition."""
        return any(partition in offsets for offsets in self._by_producer.values())

    def partitions(self) -> set[TopicPartition]:
        return {p for offsets in self._by_producer.values() for p in offsets}

    def of_partition(self, partition: TopicPartition) -> dict[int, CommittedOffset]:
        """Each open transaction's offset for the partition, by producer (for `put_back`)."""
        return {pid: offsets[partition] for pid, offsets in self._by_producer.items() if partition in offsets}

    def put_back(self, partition: TopicPartition, by_producer: dict[int, CommittedOffset]) -> None:
        """The partition's pending offsets are `by_producer` again (a tombstone's write failed)."""
        self.drop_partition(partition)
        for producer_id, value in by_producer.items():
            self.add(producer_id, partition, value)

    def drop_partition(self, partition: TopicPartition) -> None:
        """A tombstone of the partition was written: no transaction's offset for it survives."""
        for producer_id in list(self._by_producer):
            offsets = self._by_producer[producer_id]
            offsets.pop(partition, None)
            if not offsets:
                del self._by_producer[producer_id]

    def end(self, producer_id: int, marker_offset: int, commit: bool,
            committed: dict[TopicPartition, CommittedOffset]) -> None:
        """The producer's marker at `marker_offset` was written: the offsets it wrote before the
        marker join `committed` (COMMIT) or go (ABORT). Any written after it belong to the
        producer's next transaction (a marker is counted once replicated, and the producer may
        have begun another by then) and stay pending, as do those not written yet (record_offset
        -1: held in their operation's turn, txn_offsets.py), whose record will follow the marker."""
        offsets = self._by_producer.pop(producer_id, {})
        later = {p: v for p, v in offsets.items() if v.record_offset < 0 or v.record_offset > marker_offset}
        if later:
            self._by_producer[producer_id] = later
        if commit:
            for partition, value in offsets.items():
                if partition not in later:
                    keep_later(committed, partition, value)
