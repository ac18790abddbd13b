"""transaction.partition.verification.enable, static and dynamic, on a real broker (both layouts):
on (Kafka's default), a transactional Produce below v12 (v10 here) for a partition the producer never added
to its transaction is refused (INVALID_TXN_STATE, verified with the coordinator); turned off on
the broker's id at runtime, the same batch is appended unasked, as Kafka's leader does; deleted,
the check is back. Produce v12 (transactions V2) has the partition added either way."""

from __future__ import annotations

import time

from compat_tests.helpers.broker_configs import DELETE, DYNAMIC_BROKER_CONFIG, NODE, SET, described, incremental
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.txn_requests import INVALID_TXN_STATE, NONE, init, txn_id
from wire.batch_builder import build_batch

VERIFY = "transaction.partition.verification.enable"


def first_batch(client: Client, topic: str, version: int) -> int:
    """A new transactional producer's first batch in `topic`, never added to its transaction."""
    tid = txn_id()
    r = init(client, tid)
    batch = build_batch([(None, b"v")], int(time.time() * 1000), (r.producer_id, r.producer_epoch, 0), True)
    return client.produce(topic, 0, bytes(batch), transactional_id=tid, version=version).error_code


def test_verification_turned_off_and_on_at_runtime(fresh_broker):
    topic = unique_topic("txn-verify")
    with Client.to(fresh_broker) as c:
        c.create_topic(topic)
        assert first_batch(c, topic, 10) == INVALID_TXN_STATE
        assert incremental(c, 1, NODE, [(VERIFY, SET, "false")]) == (NONE, None)
        assert described(c, NODE)[VERIFY][:2] == ("false", DYNAMIC_BROKER_CONFIG)
        assert first_batch(c, topic, 10) == NONE
        assert first_batch(c, topic, 12) == NONE  # V2: added by the leader, whatever the config
        assert incremental(c, 1, NODE, [(VERIFY, DELETE, None)]) == (NONE, None)
        assert first_batch(c, topic, 10) == INVALID_TXN_STATE


def test_verification_off_at_start(broker_factory):
    proc = broker_factory("--no-transaction-partition-verification-enable")
    topic = unique_topic("txn-verify-off")
    with Client.to(proc) as c:
        c.create_topic(topic)
        assert first_batch(c, topic, 10) == NONE
