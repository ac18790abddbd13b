"""The transaction coordinator's APIs, every served version, against a real broker (both layouts):
FindCoordinator for a transactional id, InitProducerId with one, AddPartitionsToTxn (v4+: a
leader's verification, KIP-890), AddOffsetsToTxn, EndTxn (v5: transactions V2, an epoch bump
per end), DescribeTransactions, ListTransactions; and the leader's verification of a
transaction's first batch. Raw requests, so each version's fields and its errors
(INVALID_PRODUCER_EPOCH before KIP-588's PRODUCER_FENCED) are checked.
"""

from __future__ import annotations

import re
import struct
import time
import uuid
from typing import NamedTuple


from broker.txn import txn_log
from compat_tests.raw_kafka import Client, batch_header, build_request, read_records, split_batches
from compat_tests.served_versions import over_versions
from compat_tests.topics import unique_topic
from compat_tests.waiting import wait_until
from wire.batch_builder import build_batch
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
NOT_ENOUGH_REPLICAS = 19
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
    data = client.recv_payload()
    pos = 0

    def take(fmt: str):
        nonlocal pos
        (v,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return v

    def uvarint() -> int:
        nonlocal pos
        value = shift = 0
        while data[pos] & 0x80:
            value |= (data[pos] & 0x7F) << shift
            pos, shift = pos + 1, shift + 7
        value |= data[pos] << shift
        pos += 1
        return value

    def string() -> str:
        nonlocal pos
        n = uvarint() - 1
        pos += n
        return data[pos - n:pos].decode()

    assert take(">i") == cid and uvarint() == 0  # response header v1: no tagged fields
    take(">i")  # throttle time
    assert uvarint() - 1 == 1
    error_code, got_id, state = take(">h"), string(), string()
    timeout_ms, start_ms, producer_id, producer_epoch = take(">i"), take(">q"), take(">q"), take(">h")
    topics = []
    for _ in range(uvarint() - 1):
        topic = string()
        topics.append((topic, tuple(take(">i") for _ in range(uvarint() - 1))))
        assert uvarint() == 0
    assert uvarint() == 0 and uvarint() == 0 and pos == len(data)
    assert got_id == tid
    return Described(error_code, got_id, state, timeout_ms, start_ms, producer_id, producer_epoch, topics)


@over_versions(10, lo=1)
def test_find_coordinator_for_a_transactional_id(client, broker, version):
    tid = txn_id()
    if version >= 4:
        (c,) = client.request(10, version, key_type=1, coordinator_keys=[tid]).coordinators
    else:
        c = client.request(10, version, key=tid, key_type=1)
    assert (c.error_code, c.port) == (NONE, broker.port)


@over_versions(22)
def test_init_producer_id_bumps_the_epoch_of_a_transactional_id(client, version):
    tid = txn_id()
    if version == 0:  # v0 has no producer id / epoch of the asker, nor PRODUCER_FENCED
        first = client.request(22, 0, transactional_id=tid, transaction_timeout=60_000)
        again = client.request(22, 0, transactional_id=tid, transaction_timeout=60_000)
    else:
        first, again = init(client, tid, version), init(client, tid, version)
    assert (first.error_code, first.producer_epoch) == (NONE, 0)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (NONE, first.producer_id, 1)
    too_long = init(client, tid, version, timeout_ms=900_001) if version else client.request(
        22, 0, transactional_id=tid, transaction_timeout=900_001)
    assert too_long.error_code == INVALID_TRANSACTION_TIMEOUT
    if version >= 3:  # KIP-360: the producer names itself; a stale epoch is fenced, a retry answered again
        bumped = init(client, tid, version, pid=first.producer_id, epoch=1)
        assert (bumped.error_code, bumped.producer_epoch) == (NONE, 2)
        retried = init(client, tid, version, pid=first.producer_id, epoch=1)  # its answer was lost
        assert (retried.error_code, retried.producer_id, retried.producer_epoch) == (NONE, first.producer_id, 2)
        fenced = PRODUCER_FENCED if version >= 4 else INVALID_PRODUCER_EPOCH
        assert init(client, tid, version, pid=first.producer_id, epoch=0).error_code == fenced
        assert init(client, tid, version, pid=first.producer_id + 1000, epoch=2).error_code == fenced


@over_versions(24, hi=3)
def test_add_partitions_to_txn(client, version):
    tid, topic = txn_id(), unique_topic("txn-add")
    client.create_topic(topic, partitions=2)
    r = init(client, tid)
    pid, epoch = r.producer_id, r.producer_epoch
    assert add_partitions(client, tid, pid, epoch, topic, (0, 1), version) == [NONE, NONE]
    s = describe(client, tid)
    assert s.transaction_state == "Ongoing" and s.topics == [(topic, (0, 1))] and s.start_ms > 0
    fenced = PRODUCER_FENCED if version >= 2 else INVALID_PRODUCER_EPOCH
    assert add_partitions(client, tid, pid, epoch + 1, topic, (0,), version) == [fenced]
    assert add_partitions(client, tid, pid + 1000, epoch, topic, (0,), version) == [INVALID_PRODUCER_ID_MAPPING]
    assert add_partitions(client, tid, -1, epoch, topic, (0,), version) == [INVALID_PRODUCER_ID_MAPPING]
    missing = client.request(24, version, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                             v3_and_below_producer_epoch=epoch, v3_and_below_topics=[
                                 {"name": topic, "partitions": [0]}, {"name": "no-such-topic", "partitions": [0]}])
    codes = {t.name: [p.partition_error_code for p in t.results_by_partition]
             for t in missing.results_by_topic_v3_and_below}
    assert codes == {topic: [OPERATION_NOT_ATTEMPTED], "no-such-topic": [UNKNOWN_TOPIC_OR_PARTITION]}


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


@over_versions(24, lo=4)
def test_add_partitions_to_txn_from_a_leader_verifies_or_adds(client, version):
    tid, topic = txn_id(), unique_topic("txn-verify")
    client.create_topic(topic, partitions=3)
    r = init(client, tid)
    pid, epoch = r.producer_id, r.producer_epoch
    not_in = TRANSACTION_ABORTABLE if version >= 5 else INVALID_TXN_STATE
    assert broker_add_partitions(client, version, tid, pid, epoch, topic, (0,), True) == {0: not_in}
    assert add_partitions(client, tid, pid, epoch, topic, (0,)) == [NONE]
    assert broker_add_partitions(client, version, tid, pid, epoch, topic, (0, 1), True) == {0: NONE, 1: not_in}
    assert describe(client, tid).topics == [(topic, (0,))]  # verifying adds nothing
    assert broker_add_partitions(client, version, tid, pid, epoch, topic, (1,), False) == {1: NONE}
    assert describe(client, tid).topics == [(topic, (0, 1))]
    assert broker_add_partitions(client, version, tid, pid, epoch + 1, topic, (0,), True) == {0: PRODUCER_FENCED}
    assert broker_add_partitions(client, version, tid, pid + 1000, epoch, topic, (0,), True) == {
        0: INVALID_PRODUCER_ID_MAPPING}
    assert broker_add_partitions(client, version, tid, pid, epoch, topic, (7,), True) == {
        7: UNKNOWN_TOPIC_OR_PARTITION}
    assert end_txn(client, tid, pid, epoch, commit=False) == NONE


def test_a_transactions_first_batch_is_verified_by_the_leader(client):
    """A batch for a partition the producer never added, and a late batch of an aborted
    transaction, are refused with INVALID_TXN_STATE and leave the partition stable."""
    tid, topic = txn_id(), unique_topic("txn-late")
    client.create_topic(topic)
    r = init(client, tid)
    pid, epoch = r.producer_id, r.producer_epoch

    def produce(seq: int):
        batch = build_batch([(None, b"v")], int(time.time() * 1000), (pid, epoch, seq), True)
        return client.produce(topic, 0, bytes(batch), transactional_id=tid)

    assert produce(0).error_code == INVALID_TXN_STATE  # never added
    assert add_partitions(client, tid, pid, epoch, topic) == [NONE]
    assert produce(0).error_code == NONE
    assert produce(1).error_code == NONE  # the transaction is open here: no second question
    assert end_txn(client, tid, pid, epoch, commit=False) == NONE
    assert stable(client, topic) == 3  # two records and the ABORT marker
    late = produce(2)  # a retry of the aborted transaction's batch, arriving after its marker
    assert late.error_code == INVALID_TXN_STATE
    p = client.fetch(topic, 0, 0)
    assert (p.high_watermark, p.last_stable_offset) == (3, 3)
    unknown = client.produce(topic, 0, bytes(build_batch([(None, b"v")], int(time.time() * 1000), (pid, epoch, 2),
                                                        True)), transactional_id=txn_id())
    assert unknown.error_code == INVALID_PRODUCER_ID_MAPPING  # the coordinator knows no such id


@over_versions(25)
def test_add_offsets_to_txn_adds_the_groups_offsets_partition(client, version):
    tid, group = txn_id(), f"g-{uuid.uuid4().hex[:8]}"
    r = init(client, tid)
    code = client.request(25, version, transactional_id=tid, producer_id=r.producer_id,
                          producer_epoch=r.producer_epoch, group_id=group).error_code
    assert code == NONE
    ((topic, partitions),) = describe(client, tid).topics
    assert topic == "__consumer_offsets" and len(partitions) == 1
    fenced = client.request(25, version, transactional_id=tid, producer_id=r.producer_id,
                            producer_epoch=r.producer_epoch + 1, group_id=group).error_code
    assert fenced == (PRODUCER_FENCED if version >= 2 else INVALID_PRODUCER_EPOCH)


@over_versions(26, hi=4)
def test_end_txn_commits_and_aborts(client, version):
    tid, topic = txn_id(), unique_topic("txn-end")
    client.create_topic(topic)
    r = init(client, tid)
    pid, epoch = r.producer_id, r.producer_epoch
    assert end_txn(client, tid, pid, epoch, commit=True, version=version) == INVALID_TXN_STATE  # nothing open
    assert add_partitions(client, tid, pid, epoch, topic) == [NONE]
    assert produce_txn(client, tid, topic, pid, epoch, 0, [b"kept"]) == 0
    assert end_txn(client, tid, pid, epoch, commit=True, version=version) == NONE
    assert stable(client, topic) == 2  # the record and its COMMIT marker
    assert add_partitions(client, tid, pid, epoch, topic) == [NONE]
    assert produce_txn(client, tid, topic, pid, epoch, 1, [b"dropped"]) == 2
    fenced = PRODUCER_FENCED if version >= 2 else INVALID_PRODUCER_EPOCH
    assert end_txn(client, tid, pid, epoch + 1, commit=False, version=version) == fenced
    assert end_txn(client, tid, pid, epoch, commit=False, version=version) == NONE
    assert stable(client, topic) == 4
    wait_until(lambda: describe(client, tid).transaction_state == "CompleteAbort", timeout=15, what="CompleteAbort")
    assert end_txn(client, tid, pid, epoch, commit=False, version=version) == NONE  # a retried abort
    assert end_txn(client, tid, pid, epoch, commit=True, version=version) == INVALID_TXN_STATE


@over_versions(65)
def test_describe_transactions(client, version):
    tid = txn_id()
    assert describe(client, tid).error_code == TRANSACTIONAL_ID_NOT_FOUND
    r = init(client, tid, timeout_ms=12_345)
    s = describe(client, tid)
    assert (s.error_code, s.transaction_state, s.producer_id, s.producer_epoch) == (
        NONE, "Empty", r.producer_id, r.producer_epoch)
    assert (s.timeout_ms, s.start_ms, s.topics) == (12_345, -1, [])


@over_versions(66)
def test_list_transactions(client, version):
    tid, topic = txn_id(), unique_topic("txn-list")
    client.create_topic(topic)
    r = init(client, tid)
    assert add_partitions(client, tid, r.producer_id, r.producer_epoch, topic) == [NONE]
    values = {"state_filters": ["Ongoing", "NoSuchState"], "producer_id_filters": [r.producer_id]}
    if version >= 1:
        values["duration_filter"] = -1
    listed = client.request(66, version, **values)
    assert listed.error_code == NONE and tuple(listed.unknown_state_filters) == ("NoSuchState",)
    assert [(s.transactional_id, s.producer_id, s.transaction_state) for s in listed.transaction_states] == [
        (tid, r.producer_id, "Ongoing")]
    empty = client.request(66, version, **{**values, "state_filters": ["CompleteCommit"]})
    assert empty.transaction_states == ()
    if version >= 1:  # open for an hour at least: not this one
        assert client.request(66, version, **{**values, "duration_filter": 3_600_000}).transaction_states == ()
    if version >= 2:  # KIP-1152: the whole id must match the pattern; a broken pattern is refused
        def matching(pattern):
            r = client.request(66, version, **{**values, "transactional_id_pattern": pattern})
            return r.error_code, [s.transactional_id for s in r.transaction_states]
        assert matching(re.escape(tid[:-1]) + ".") == (NONE, [tid])
        assert matching(re.escape(tid[:-1])) == (NONE, [])
        assert matching("") == (NONE, [tid])
        assert matching("(") == (INVALID_REGULAR_EXPRESSION, [])
    assert end_txn(client, tid, r.producer_id, r.producer_epoch, commit=False) == NONE


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


@over_versions(26, lo=5)
def test_end_txn_v5_bumps_the_epoch_at_every_end(client, version):
    """Transactions V2: every end answers the next epoch and writes its markers with it, so the
    ended transaction's producer is fenced at the old one; a retried end gets the same answer;
    an abort with nothing begun is served; __transaction_state records what Kafka records."""
    tid, topic = txn_id(), unique_topic("txn-v2")
    client.create_topic(topic)
    r = init(client, tid)
    pid, e = r.producer_id, r.producer_epoch
    assert end_v2(client, tid, pid, e, commit=True, version=version) == (INVALID_TXN_STATE, -1, -1)  # nothing open
    # a leader enrols the partition, as for a Produce v12 (AddPartitionsToTxn v5, not verify-only)
    assert broker_add_partitions(client, 5, tid, pid, e, topic, (0,), False) == {0: NONE}
    assert produce_txn(client, tid, topic, pid, e, 0, [b"kept"]) == 0
    assert end_v2(client, tid, pid, e, commit=True, version=version) == (NONE, pid, e + 1)
    assert stable(client, topic) == 2
    assert marker_epochs(client, topic) == [e + 1]
    state_of(client, tid, "CompleteCommit", e + 1)
    assert end_v2(client, tid, pid, e, commit=True, version=version) == (NONE, pid, e + 1)  # a retry: same answer
    assert end_v2(client, tid, pid, e, commit=False, version=version) == (INVALID_TXN_STATE, -1, -1)

    # the ended transaction's producer, late, at the old epoch
    late = client.produce(topic, 0, bytes(build_batch([(None, b"late")], int(time.time() * 1000), (pid, e, 1), True)),
                          transactional_id=tid)
    assert late.error_code == INVALID_PRODUCER_EPOCH
    assert add_partitions(client, tid, pid, e, topic) == [PRODUCER_FENCED]
    assert end_v2(client, tid, pid, e + 7, commit=True, version=version) == (PRODUCER_FENCED, -1, -1)
    assert end_v2(client, tid, pid + 1000, e + 1, commit=True, version=version) == (
        INVALID_PRODUCER_ID_MAPPING, -1, -1)
    assert end_v2(client, tid, -1, e + 1, commit=True, version=version) == (INVALID_PRODUCER_ID_MAPPING, -1, -1)

    # the next transaction, at the new epoch, aborted
    assert broker_add_partitions(client, 5, tid, pid, e + 1, topic, (0,), False) == {0: NONE}
    assert produce_txn(client, tid, topic, pid, e + 1, 0, [b"dropped"]) == 2
    assert end_v2(client, tid, pid, e + 1, commit=False, version=version) == (NONE, pid, e + 2)
    assert stable(client, topic) == 4
    assert marker_epochs(client, topic) == [e + 1, e + 2]
    state_of(client, tid, "CompleteAbort", e + 2)

    # an abort with nothing begun: a V2 client cannot know whether a leader enrolled a partition
    assert end_v2(client, tid, pid, e + 2, commit=False, version=version) == (NONE, pid, e + 3)
    state_of(client, tid, "CompleteAbort", e + 3)
    assert end_v2(client, tid, pid, e + 2, commit=False, version=version) == (NONE, pid, e + 3)
    assert end_v2(client, tid, pid, e + 3, commit=True, version=version) == (INVALID_TXN_STATE, -1, -1)
    assert marker_epochs(client, topic) == [e + 1, e + 2]  # no partition: no marker

    prepared = [s for s in stored_states(client, tid) if s.state.kafka_name in ("PrepareCommit", "PrepareAbort")]
    assert [(s.state.kafka_name, s.producer_epoch, s.client_transaction_version) for s in prepared] == [
        ("PrepareCommit", e + 1, 2), ("PrepareAbort", e + 2, 2), ("PrepareAbort", e + 3, 2)]
    assert {(s.previous_producer_id, s.next_producer_id) for s in prepared} == {(pid, -1)}


@over_versions(0, lo=3)
def test_a_transactions_first_batch_per_produce_version(client, version):
    """Below v12 the leader only verifies a transaction's first batch in a partition (KIP-890
    part 1: refused, the partition never added); from v12, a client of transactions V2, it adds
    the partition to the transaction itself, and a producer at an ended transaction's epoch is
    refused there by the coordinator."""
    tid, topic = txn_id(), unique_topic("txn-enrol")
    client.create_topic(topic, partitions=3)
    r = init(client, tid)
    pid, e = r.producer_id, r.producer_epoch

    def produce(partition: int, epoch: int, seq: int, value: bytes):
        batch = build_batch([(None, value)], int(time.time() * 1000), (pid, epoch, seq), True)
        return client.produce(topic, partition, bytes(batch), version=version, transactional_id=tid)

    first = produce(0, e, 0, b"a")
    if version < 12:
        assert first.error_code == (TRANSACTION_ABORTABLE if version >= 11 else INVALID_TXN_STATE)
        assert (describe(client, tid).transaction_state, client.fetch(topic, 0, 0).high_watermark) == ("Empty", 0)
        return
    assert first.error_code == NONE
    assert produce(1, e, 0, b"b").error_code == NONE
    s = describe(client, tid)
    assert (s.transaction_state, s.topics) == ("Ongoing", [(topic, (0, 1))])
    stored = stored_states(client, tid)[-1]
    assert (stored.state.kafka_name, stored.client_transaction_version) == ("Ongoing", 2)
    assert end_v2(client, tid, pid, e, commit=True) == (NONE, pid, e + 1)
    assert stable(client, topic) == 2
    assert produce(1, e, 1, b"late").error_code == INVALID_PRODUCER_EPOCH  # its marker carries e + 1
    assert produce(2, e, 0, b"late").error_code == INVALID_PRODUCER_EPOCH  # the coordinator: PRODUCER_FENCED
    assert client.fetch(topic, 2, 0).high_watermark == 0
    state_of(client, tid, "CompleteCommit", e + 1)
    assert produce(2, e + 1, 0, b"next").error_code == NONE  # the next transaction, at the bumped epoch
    assert describe(client, tid).topics == [(topic, (2,))]
    assert end_v2(client, tid, pid, e + 1, commit=False) == (NONE, pid, e + 2)


def test_a_lower_transaction_version_is_advertised_and_v2_requests_still_served(broker_factory):
    """transaction.version 1: ApiVersions finalizes 1 (clients stay on transactions V1); a
    request of V2 is still served by its version, as Kafka serves it."""
    low = broker_factory("--transaction-version", "1")
    with Client.to(low) as c:
        r = c.request(18, 4, client_software_name="twinlog-compat", client_software_version="1.0")
        assert [(f.name, f.max_version_level) for f in r.finalized_features] == [("transaction.version", 1)]
        tid, topic = txn_id(), unique_topic("txn-tv1")
        c.create_topic(topic)
        i = init(c, tid)
        batch = build_batch([(None, b"v")], int(time.time() * 1000), (i.producer_id, i.producer_epoch, 0), True)
        assert c.produce(topic, 0, bytes(batch), version=12, transactional_id=tid).error_code == NONE
        assert end_v2(c, tid, i.producer_id, i.producer_epoch, commit=True) == (
            NONE, i.producer_id, i.producer_epoch + 1)
    off = broker_factory("--transaction-version", "0")
    with Client.to(off) as c:
        r = c.request(18, 4, client_software_name="twinlog-compat", client_software_version="1.0")
        assert (r.finalized_features, r.finalized_features_epoch > 0) == ((), True)  # level 0 is not listed


def test_an_end_at_the_last_epoch_moves_the_producer_to_a_new_id(client):
    """EndTxn v5 at epoch 32766 (the last a producer may use): its markers carry the old id at
    32767 and the answer is a new producer id at epoch 0, as Kafka's coordinator rotates; the
    retried end with the old id gets the same answer, and the old id is refused from then on."""
    tid, topic = txn_id(), unique_topic("txn-rotate")
    client.create_topic(topic, partitions=2)
    r = init(client, tid)
    pid = r.producer_id
    window = 500  # InitProducerIds in flight at once: the broker answers a connection's requests in order
    for start in range(r.producer_epoch, 32766, window):
        sent = [client.send(build_request(22, INIT_V, transactional_id=tid, transaction_timeout=60_000,
                                          producer_id=-1, producer_epoch=-1))
                for _ in range(min(window, 32766 - start))]
        last = [client.recv(22, INIT_V, cid) for cid in sent][-1]
    assert (last.error_code, last.producer_id, last.producer_epoch) == (NONE, pid, 32766)

    def produce(partition: int, producer: int, epoch: int, value: bytes) -> int:
        batch = build_batch([(None, value)], int(time.time() * 1000), (producer, epoch, 0), True)
        return client.produce(topic, partition, bytes(batch), version=12, transactional_id=tid).error_code

    assert produce(0, pid, 32766, b"last") == NONE
    code, new_pid, new_epoch = end_v2(client, tid, pid, 32766, commit=True)
    assert (code, new_epoch) == (NONE, 0) and new_pid not in (pid, -1)
    assert stable(client, topic) == 2
    assert marker_epochs(client, topic) == [32767]
    state_of(client, tid, "CompleteCommit", 0)
    s = describe(client, tid)
    assert s.producer_id == new_pid
    prepared, completed = stored_states(client, tid)[-2:]
    assert (prepared.producer_id, prepared.producer_epoch, prepared.next_producer_id) == (pid, 32767, new_pid)
    assert (completed.producer_id, completed.producer_epoch, completed.previous_producer_id) == (new_pid, 0, pid)
    assert end_v2(client, tid, pid, 32766, commit=True) == (NONE, new_pid, 0)  # the retry, with the old id
    # the old id is no longer the transactional id's: the coordinator refuses its first batches
    assert produce(0, pid, 32766, b"late") == INVALID_PRODUCER_ID_MAPPING
    assert produce(1, pid, 32766, b"late") == INVALID_PRODUCER_ID_MAPPING
    assert add_partitions(client, tid, pid, 32766, topic) == [INVALID_PRODUCER_ID_MAPPING]
    assert produce(1, new_pid, 0, b"next") == NONE
    assert end_v2(client, tid, new_pid, 0, commit=True) == (NONE, new_pid, 1)


def test_a_fenced_producers_end_at_its_old_epoch_is_fenced(client):
    """A new InitProducerId fences an open transaction's producer and aborts it. At
    transaction.version 2 the abort bumps the epoch once more than the fencing (Kafka's
    coordinator ends it with the cluster's version), so the fenced producer's EndTxn v5, whose
    epoch + 1 is the fencing's, is PRODUCER_FENCED rather than taken for the retry of an end."""
    tid, topic = txn_id(), unique_topic("txn-fence-v2")
    client.create_topic(topic)
    r = init(client, tid)
    pid, e = r.producer_id, r.producer_epoch
    assert broker_add_partitions(client, 5, tid, pid, e, topic, (0,), False) == {0: NONE}
    assert produce_txn(client, tid, topic, pid, e, 0, [b"open"]) == 0
    assert init(client, tid).error_code == CONCURRENT_TRANSACTIONS  # fenced, its transaction aborting
    state_of(client, tid, "CompleteAbort", e + 2)
    assert marker_epochs(client, topic) == [e + 2]
    assert end_v2(client, tid, pid, e, commit=False) == (PRODUCER_FENCED, -1, -1)
    assert end_v2(client, tid, pid, e, commit=True) == (PRODUCER_FENCED, -1, -1)
    again = init(client, tid)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (NONE, pid, e + 3)
