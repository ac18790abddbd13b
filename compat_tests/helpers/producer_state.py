"""DescribeProducers over a raw socket, and idempotent produce of numbered batches."""

from __future__ import annotations

from compat_tests.helpers.raw_kafka import Client
from wire.batch_builder import build_batch

NONE = 0


def describe(client: Client, topic: str, partitions: list[int], version: int = 0) -> dict:
    """{partition: (error code, [(id, epoch, last seq, last timestamp, coordinator epoch, txn start)])}."""
    r = client.request(61, version, topics=[{"name": topic, "partition_indexes": partitions}])
    (t,) = r.topics
    assert t.name == topic
    return {p.partition_index: (p.error_code, sorted(
        (s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp, s.coordinator_epoch,
         s.current_txn_start_offset) for s in p.active_producers)) for p in t.partitions}


def produce(client: Client, topic: str, pid: int, sequence: int, values: list[bytes], timestamp: int,
            transactional: bool = False) -> None:
    batch = build_batch([(None, v) for v in values], timestamp, (pid, 0, sequence), transactional)
    assert client.produce(topic, 0, bytes(batch)).error_code == NONE
