"""Raw transaction requests the transaction tests share: InitProducerId, AddPartitionsToTxn (a
client's v3 and below, a leader's v4+), EndTxn (v4 and below, and V2's v5 with its epoch answer),
a transactional Produce, DescribeTransactions decoded by hand, the last stable offset, the
markers' epochs and the coordinator's own __transaction_state records.
"""

from __future__ import annotations

import time
import uuid
from typing import NamedTuple

from broker.txn import txn_log
from compat_tests.helpers.cluster import Cluster
from compat_tests.helpers.raw_kafka import Client, batch_header, build_request, read_records, split_batches
from compat_tests.helpers.waiting import wait_until
from wire.batch_builder import build_batch
from wire.field_codec import FieldReader
from wire.protocol import SERVED_VERSIONS

NONE = 0
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
TRANSACTIONAL_ID_NOT_FOUND = 105
PRODUCER_FENCED = 90
UNKNOWN_TOPIC_OR_PARTITION = 3
OPERATION_NOT_ATTEMPTED = 55
INVALID_REGULAR_EXPRESSION = 128
TRANSACTION_ABORTABLE = 120
INIT_V = SERVED_VERSIONS[22][1]


def txn_id() -> str:
    return f"txn-{uuid.uuid4().hex[:10]}"


def init(client: Client, tid: str, version: int = INIT_V, timeout_ms: int = 60_000, pid: int = -1, epoch: int = -1):
    return client.request(22, version, transactional_id=tid, transaction_timeout=timeout_ms, producer_id=pid,
                          producer_epoch=epoch)


def add_partitions(client: Client, tid: str, pid: int, epoch: int, topic: str, partitions=(0,), version: int = 3):
    r = client.request(24, version, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                       v3_and_below_producer_epoch=epoch,
                       v3_and_below_topics=[{"name": topic, "partitions": list(partitions)}])
    (t,) = r.results_by_topic_v3_and_below
    assert t.name == topic
    return [p.partition_error_code for p in t.results_by_partition]


def end_txn(client: Client, tid: str, pid: int, epoch: int, commit: bool, version: int = 4) -> int:
    return client.request(26, version, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                          committed=commit).error_code


def produce_txn(client: Client, tid: str, topic: str, pid: int, epoch: int, seq: int, values) -> int:
    batch = build_batch([(None, v) for v in values], int(time.time() * 1000), (pid, epoch, seq), True)
    p = client.produce(topic, 0, bytes(batch), transactional_id=tid)
    assert p.error_code == NONE, p
    return p.base_offset


def stable(client: Client, topic: str) -> int:
    """The partition's last stable offset, once no marker is still on its way (LSO = HW)."""
    def settled():
        p = client.fetch(topic, 0, 0)
        return p.last_stable_offset == p.high_watermark and p.last_stable_offset
    return wait_until(settled, timeout=15, what=f"{topic}'s open transactions to end")

def broker_add_partitions(client: Client, version: int, tid: str, pid: int, epoch: int, topic: str, partitions,
                          verify_only: bool) -> dict[int, int]:
    """AddPartitionsToTxn v4+ as a leader sends it: partition -> error code."""
    r = client.request(24, version, transactions=[{
        "transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "verify_only": verify_only,
        "topics": [{"name": topic, "partitions": list(partitions)}]}])
    assert r.error_code == NONE
    (txn,) = r.results_by_transaction
    (t,) = txn.topic_results
    assert (txn.transactional_id, t.name) == (tid, topic)
    return {p.partition_index: p.partition_error_code for p in t.results_by_partition}


class BadResponse(ValueError):
    """A DescribeTransactions response cut short or malformed."""


class Described(NamedTuple):
    error_code: int
    transactional_id: str
    transaction_state: str
    timeout_ms: int
    start_ms: int
    producer_id: int
    producer_epoch: int
    topics: list[tuple[str, tuple[int, ...]]]


def describe(client: Client, tid: str) -> Described:
    """DescribeTransactions v0, decoded here: kio's reader refuses the -1 start time Kafka answers
    for an id with no open transaction."""
    cid = client.send(build_request(65, 0, transactional_ids=[tid]))
    r = FieldReader(client.recv_payload(), BadResponse)
    assert r.i32() == cid and r.tagged_fields() == {}  # response header v1
    r.i32()  # throttle time

    def state() -> Described:
        error_code, got_id, name = r.i16(), r.compact_nullable_string(), r.compact_nullable_string()
        timeout_ms, start_ms, producer_id, producer_epoch = r.i32(), r.i64(), r.i64(), r.i16()

        def topic() -> tuple[str, tuple[int, ...]]:
            t = (r.compact_nullable_string(), tuple(r.array(r.i32, flexible=True)))
            assert r.tagged_fields() == {}
            return t

        topics = r.array(topic, flexible=True)
        assert r.tagged_fields() == {}
        return Described(error_code, got_id, name, timeout_ms, start_ms, producer_id, producer_epoch, topics)

    (described,) = r.array(state, flexible=True)
    assert r.tagged_fields() == {} and r.pos == len(r.data)
    assert described.transactional_id == tid
    return described


def end_v2(client: Client, tid: str, pid: int, epoch: int, commit: bool, version: int = 5) -> tuple[int, int, int]:
    """EndTxn v5: (error, producer id, producer epoch) of the answer."""
    r = client.request(26, version, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit)
    return r.error_code, r.producer_id, r.producer_epoch


def marker_epochs(client: Client, topic: str) -> list[int]:
    """The producer epoch of every control batch (marker) in partition 0, in log order."""
    batches, _ = split_batches(client.fetch(topic, 0, 0).records)
    return [h["producer_epoch"] for h in map(batch_header, batches) if h["attributes"] & 0x20]


def stored_states(client: Client, tid: str) -> list[txn_log.TxnRecord]:
    """Every __transaction_state record of the id, in log order (50 partitions: the default)."""
    index, records, offset = txn_log.partition_for(tid, 50), [], 0
    while True:  # a fetch answers part of a long log
        p = client.fetch(txn_log.TOPIC, index, offset)
        got = read_records(p.records)
        records += got
        if not got or got[-1][0] + 1 >= p.high_watermark:
            break
        offset = got[-1][0] + 1
    return [txn_log.decode_value(v) for _, _, k, v in records if txn_log.decode_key(k) == tid and v is not None]


def state_of(client: Client, tid: str, state: str, epoch: int) -> None:
    wait_until(lambda: (describe(client, tid).transaction_state, describe(client, tid).producer_epoch) == (state, epoch),
               timeout=15, what=f"{tid} in {state} at epoch {epoch}")


def coordinator_of(cluster: Cluster, tid: str) -> int:
    def ask():
        for proc in cluster.brokers.values():
            if not proc.is_running():
                continue
            try:
                with Client(proc.host, proc.port, timeout=3) as c:
                    r = c.request(10, 3, key=tid, key_type=1)
            except OSError:
                continue
            if r.error_code == 0:
                return r.node_id
        return None
    return wait_until(ask, f"a coordinator for {tid}", timeout=30, interval=0.2)
