"""Appending transaction markers to partitions this broker leads, and waiting until they are
replicated: what WriteTxnMarkers does for a remote coordinator and what a local coordinator
calls directly.

The markers go through the write path (replica/write_path.py), all of one call together, so
they share one group commit: NOT_LEADER_OR_FOLLOWER where this broker does not lead,
INVALID_PRODUCER_EPOCH for an epoch older than the producer's, TRANSACTION_COORDINATOR_FENCED
for an older coordinator epoch. Each is answered as Kafka's coordinator appends it: with
acks=all, once the high watermark passes it (and after the fsync flush.messages asks for),
because the coordinator counts a transaction complete only when every marker is replicated. A
replicated marker in `__consumer_offsets` also ends the producer's pending transactional
offsets there (Kafka's onTransactionCompleted).
"""

from __future__ import annotations

from typing import NamedTuple

from wire.error_codes import ErrorCode

from replica.write_path import MarkerWrite

from broker.groups import offsets, offsets_log

MARKER_TIMEOUT_S = 30.0  # Kafka's request.timeout.ms, which its coordinator's marker appends wait


class Marker(NamedTuple):
    topic: str
    index: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool


async def append_markers(broker, markers: list[Marker]) -> list[ErrorCode]:
    """Each marker in its partition; returns an error code per marker (none once replicated)."""
    codes: list[ErrorCode | None] = []
    writes = []
    for m in markers:
        partition = broker.topics.partition(m.topic, m.index)
        if broker.topics.get(m.topic) is None or partition is None:
            codes.append(broker.topics.missing_partition_error(m.topic, m.index))
        elif partition.read_only:
            codes.append(ErrorCode.invalid_topic_exception)
        else:
            codes.append(None)
            writes.append(MarkerWrite(partition, m.producer_id, m.producer_epoch, m.coordinator_epoch, m.commit))
    results = iter(await broker.write_path.append_records(writes, acks=-1, timeout_s=MARKER_TIMEOUT_S))
    for i, m in enumerate(markers):
        if codes[i] is not None:
            continue
        result = next(results)
        codes[i] = result.error
        if result.ok and m.topic == offsets_log.TOPIC:
            offsets.end_transaction(broker.groups, m.index, m.producer_id, result.info.first_offset, m.commit)
    return codes


async def append_marker(broker, topic_name: str, index: int, producer_id: int, producer_epoch: int,
                        coordinator_epoch: int, commit: bool) -> ErrorCode:
    """One marker in one partition; returns its error code (none once replicated)."""
    (code,) = await append_markers(broker, [Marker(topic_name, index, producer_id, producer_epoch,
                                                   coordinator_epoch, commit)])
    return code
