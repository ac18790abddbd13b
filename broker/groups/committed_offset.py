"""One partition's committed offset in a group, as OffsetCommit / TxnOffsetCommit store it
and `__consumer_offsets` records it (offsets_log.py); its own module because both the group and
the pending transactional offsets (pending_offsets.py) hold it.

`OffsetRecord`: a commit's record as an operation writes it. `UnreplicatedOffsets`: a commit is replayed into its group before its record is written
(offset_ops.py), and counts only once every in-sync replica has it. Until then OffsetFetch
answers the value before it, as Kafka's coordinator reads at its last committed offset: per
partition, the value before the records this coordinator wrote and not yet replicated, and
those records, oldest first (each learns its offset when its batch is in the log).
"""

from __future__ import annotations

from dataclasses import dataclass

TopicPartition = tuple[str, int]


@dataclass
class CommittedOffset:
    offset: int
    leader_epoch: int  # -1: unknown
    metadata: str
    commit_timestamp: int
    # Where its record sits in the group's __consumer_offsets partition: of a plain and a
    # transactional commit of one partition, the later record wins (pending_offsets.py).
    record_offset: int = -1


@dataclass(eq=False)
class OffsetRecord:
    """A committed offset an operation of the groups' shard writes (offset_ops.py): the value
    object itself, so the one the replay applies learns where its record went, as the record
    does (`record_offset`, set by OffsetsStore.append_records once the batch is in the log)."""

    group_id: str
    partition: tuple[str, int]  # (topic, partition)
    value: CommittedOffset | None  # None: the partition's tombstone
    record_offset: int = -1  # -1: not in the log yet
    producer_id: int = -1  # >= 0: in that producer's transactional batch, pending until its marker

    def written_at(self, offset: int) -> None:
        self.record_offset = offset
        if self.value is not None:
            self.value.record_offset = offset


class UnreplicatedOffsets:
    def __init__(self) -> None:
        self._by_partition: dict[TopicPartition, tuple[CommittedOffset | None, list[OffsetRecord]]] = {}

    def written(self, record: OffsetRecord, before: CommittedOffset | None) -> None:
        """`record` is replayed (its write begins); `before`: the partition's value until then."""
        kept = self._by_partition.get(record.partition)
        if kept is None:
            self._by_partition[record.partition] = (before, [record])
        else:
            kept[1].append(record)

    def kept(self, partition: TopicPartition) -> tuple[CommittedOffset | None, list[OffsetRecord]] | None:
        """What is kept for `partition` now (for `put_back`: a write that fails undoes its records)."""
        kept = self._by_partition.get(partition)
        return None if kept is None else (kept[0], list(kept[1]))

    def put_back(self, partition: TopicPartition,
                 kept: tuple[CommittedOffset | None, list[OffsetRecord]] | None) -> None:
        if kept is None:
            self._by_partition.pop(partition, None)
        else:
            self._by_partition[partition] = kept

    def visible(self, partition: TopicPartition, latest: CommittedOffset | None,
                high_watermark: int) -> CommittedOffset | None:
        """What a fetch answers for `partition`, whose value is `latest`: the value of its last
        record below `high_watermark` (those replicated are forgotten), else the value before."""
        kept = self._by_partition.get(partition)
        if kept is None:
            return latest
        before, records = kept
        replicated = sum(1 for r in records if 0 <= r.record_offset < high_watermark)  # a prefix: written in order
        if replicated == len(records):
            del self._by_partition[partition]
            return latest
        if replicated:
            before = records[replicated - 1].value
            self._by_partition[partition] = (before, records[replicated:])
        return before
