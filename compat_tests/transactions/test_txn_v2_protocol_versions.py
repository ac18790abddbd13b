"""Transactions V2 (KIP-890 part 2) against a real broker, both layouts: EndTxn v5 bumps the
epoch at every end and fences the ended transaction's producer; a Produce v12+ opens a
transaction's partition without AddPartitionsToTxn; a broker advertising transaction.version 1
still serves V2 requests; an end at the last epoch moves the producer to a new id.
Split from test_txn_protocol_versions.py, which keeps the coordinator's APIs version by version;
the raw requests both use are in txn_requests.py.
"""

from __future__ import annotations

import time

from compat_tests.helpers.raw_kafka import Client, build_request
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.txn_requests import (
    CONCURRENT_TRANSACTIONS, INIT_V, INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE, NONE,
    PRODUCER_FENCED, TRANSACTION_ABORTABLE, add_partitions, broker_add_partitions, describe, end_v2, init,
    marker_epochs, produce_txn, stable, state_of, stored_states, txn_id)
from wire.batch_builder import build_batch


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
        assert [(f.name, f.max_version_level) for f in r.finalized_features] == [
            ("group.version", 1), ("share.version", 1), ("streams.version", 1), ("transaction.version", 1)]
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
        assert ([f.name for f in r.finalized_features], r.finalized_features_epoch > 0) == (
            ["group.version", "share.version", "streams.version"], True)  # transaction.version's level 0 is not listed


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
