"""An EndTxn v0-v4 that reaches the coordinator late, on a connection its client had given up,
against a real broker (both layouts).

librdkafka times an EndTxn out after socket.timeout.ms, closes its connection and sends the
EndTxn again on a new one. When a network cut dropped the first copy, the client's kernel still
holds it and sends it again once the cut heals, so it can arrive after the retry ended that
transaction and the client began the next one on its new connection. A transactions V1 producer
keeps its epoch from one transaction to the next, so by its fields the copy is an end of the open
transaction; taken as one, it commits the records written so far, and those still to come are
refused as not in the transaction: a transaction half visible (the fault suite's
leader-etcd-stale-clients, once in a fresh-clone make test). The copy came on a connection older
than the one that began the open transaction, which tells it apart (broker/txn/txn_shard.py).

Raw connections play the client, the order of its requests made exact: `given_up` is the
connection its EndTxn timed out on, `replacement` the one it opened after; the late copy is sent
on `given_up` once the next transaction has begun on `replacement` and written to one of its two
partitions.
"""

from __future__ import annotations

import time

from compat_tests.helpers.committed_reader import committed_values
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.txn_requests import (NONE, PRODUCER_FENCED, add_partitions, describe, end_txn, init,
                                               stable, state_of, txn_id)
from wire.batch_builder import build_batch

V1_PRODUCE = 10  # below v12: a transactions V1 client's Produce, which the leader verifies (KIP-890 part 1)


def _produce(client: Client, tid: str, topic: str, producer: tuple[int, int], seq: int, value: bytes) -> int:
    batch = build_batch([(None, value)], int(time.time() * 1000), (*producer, seq), True)
    return client.produce(topic, 0, bytes(batch), version=V1_PRODUCE, transactional_id=tid).error_code


def test_a_late_end_txn_on_a_connection_given_up_ends_nothing(broker, client):
    topics = unique_topic("txn-late-a"), unique_topic("txn-late-b")
    for topic in topics:
        client.create_topic(topic)
    tid = txn_id()
    with Client.to(broker) as given_up:
        answer = init(given_up, tid)
        producer = (answer.producer_id, answer.producer_epoch)
        for topic in topics:  # the first transaction, begun and written on `given_up`
            assert add_partitions(given_up, tid, *producer, topic) == [NONE]
            assert _produce(given_up, tid, topic, producer, 0, b"first") == NONE
        with Client.to(broker) as replacement:
            # its EndTxn timed out on `given_up`; the retry on `replacement` commits it
            assert end_txn(replacement, tid, *producer, commit=True) == NONE
            state_of(replacement, tid, "CompleteCommit", producer[1])
            for topic in topics:  # the next transaction: both partitions added, one written
                assert add_partitions(replacement, tid, *producer, topic) == [NONE]
            assert _produce(replacement, tid, topics[0], producer, 1, b"second") == NONE

            # the first EndTxn's copy, let through as the cut heals
            assert end_txn(given_up, tid, *producer, commit=True) == PRODUCER_FENCED
            assert describe(replacement, tid).transaction_state == "Ongoing"

            assert _produce(replacement, tid, topics[1], producer, 1, b"second") == NONE
            assert end_txn(replacement, tid, *producer, commit=True) == NONE
    for topic in topics:
        stable(client, topic)
        assert committed_values(broker.bootstrap, topic) == [b"first", b"second"]
