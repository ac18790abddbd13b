"""The transaction coordinator's APIs, every served version, against a real broker (both layouts):
FindCoordinator for a transactional id, InitProducerId with one, AddPartitionsToTxn (v4+: a
leader's verification, KIP-890), AddOffsetsToTxn, EndTxn (v5: transactions V2, an epoch bump
per end), DescribeTransactions, ListTransactions; and the leader's verification of a
transaction's first batch. Raw requests, so each version's fields and its errors
(INVALID_PRODUCER_EPOCH before KIP-588's PRODUCER_FENCED) are checked.
"""

from __future__ import annotations

import re
import time
import uuid

from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.txn_requests import (
    INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING, INVALID_REGULAR_EXPRESSION, INVALID_TRANSACTION_TIMEOUT,
    INVALID_TXN_STATE, NONE, OPERATION_NOT_ATTEMPTED, PRODUCER_FENCED, TRANSACTION_ABORTABLE,
    TRANSACTIONAL_ID_NOT_FOUND, UNKNOWN_TOPIC_OR_PARTITION, add_partitions, broker_add_partitions, describe, end_txn,
    init, produce_txn, stable, txn_id)
from compat_tests.helpers.waiting import wait_until
from wire.batch_builder import build_batch


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


def test_a_request_with_two_transactional_producers_is_refused_whole(client):
    """Kafka's ReplicaManager refuses a Produce whose transactional batches name more than one
    producer (InvalidPidMappingException): every partition answers INVALID_PRODUCER_ID_MAPPING
    and nothing is appended."""
    topic = unique_topic("txn-two-producers")
    client.create_topic(topic, partitions=2)
    tid = txn_id()
    first, second = init(client, tid), init(client, txn_id())
    assert add_partitions(client, tid, first.producer_id, first.producer_epoch, topic, (0, 1)) == [NONE, NONE]
    now = int(time.time() * 1000)
    batches = [build_batch([(None, b"v")], now, (r.producer_id, r.producer_epoch, 0), True) for r in (first, second)]
    resp = client.request(0, 11, transactional_id=tid, acks=-1, timeout=10_000, topic_data=[{
        "name": topic, "partition_data": [{"index": i, "records": bytes(b)} for i, b in enumerate(batches)]}])
    (t,) = resp.responses
    assert sorted((p.index, p.error_code) for p in t.partition_responses) == [
        (0, INVALID_PRODUCER_ID_MAPPING), (1, INVALID_PRODUCER_ID_MAPPING)]
    assert [client.fetch(topic, i, 0).high_watermark for i in (0, 1)] == [0, 0]


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
    # The marker is readable before the coordinator has written CompleteCommit; until then it
    # answers CONCURRENT_TRANSACTIONS, which clients retry, as Kafka's does.
    wait_until(lambda: add_partitions(client, tid, pid, epoch, topic) == [NONE], "the next transaction's partition")
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
