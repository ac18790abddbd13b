"""A producer id from InitProducerId, and WriteTxnMarkers as the transaction coordinator sends it."""

from __future__ import annotations

from compat_tests.helpers.raw_kafka import Client

NONE = 0


def producer_id(client: Client) -> int:
    r = client.request(22, 4, transactional_id=None, transaction_timeout=60_000, producer_id=-1, producer_epoch=-1)
    assert r.error_code == NONE
    return r.producer_id


def write_marker(client: Client, topic: str, pid: int, commit: bool, version: int = 1, epoch: int = 0,
                 coordinator_epoch: int = 0, partition: int = 0) -> int:
    marker = {"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
              "coordinator_epoch": coordinator_epoch, "topics": [{"name": topic, "partition_indexes": [partition]}]}
    if version >= 2:
        marker["transaction_version"] = 1
    r = client.request(27, version, markers=[marker])
    (m,) = r.markers
    assert m.producer_id == pid
    (t,) = m.topics
    (p,) = t.partitions
    assert (t.name, p.partition_index) == (topic, partition)
    return p.error_code
