"""EndTxn's answer in every state a client can find, both versions, each epoch (the id's, one
lower, another) and commit or abort, against a real broker in both layouts: Kafka 4.x's table
(broker/txn/end_table.py), written out here cell by cell. A prepared end is held by a topic
whose min.insync.replicas one broker cannot meet: its markers are refused and retried until the
test lowers it. And the issue-37 order: a Java producer's EndTxn for its next transaction, sent
before that transaction's records while the last one still completes, is told to retry
(CONCURRENT_TRANSACTIONS, where twinlog answered PRODUCER_FENCED) and commits on the retry.

The rows no request can find from outside (a write of the id's record in flight, PrepareEpochFence,
Dead) are the table's unit tests' (broker/tests/test_txn_end_table.py).
"""

from __future__ import annotations

import time

import pytest

from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.txn_requests import (
    CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE, NONE, PRODUCER_FENCED, add_partitions, broker_add_partitions, describe,
    end_txn, end_v2, init, marker_epochs, stable, state_of, txn_id)
from wire.batch_builder import build_batch

pytestmark = pytest.mark.timeout(120)

PF, CT, ITS = PRODUCER_FENCED, CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE
OK = "ok"  # the end already completed: answered again, nothing written
TO_PC, TO_PA = "PrepareCommit", "PrepareAbort"  # the end is prepared (and then completes)
COLUMNS = [(commit, kind) for commit in (False, True) for kind in ("retry", "current", "other")]
# (abort: RETRY, CURRENT, OTHER; commit: RETRY, CURRENT, OTHER), Kafka 4.x's answers
V5 = {
    "Empty": (PF, TO_PA, PF, PF, ITS, PF),
    "Ongoing": (PF, TO_PA, PF, PF, TO_PC, PF),
    "CompleteCommit": (ITS, TO_PA, PF, OK, ITS, PF),
    "CompleteAbort": (OK, TO_PA, PF, ITS, ITS, PF),
    "PrepareCommit": (CT, CT, CT, CT, CT, CT),  # KAFKA-18464: busy before the epoch
    "PrepareAbort": (CT, CT, CT, CT, CT, CT),
}
V4 = {
    "Empty": (PF, ITS, PF, PF, ITS, PF),
    "Ongoing": (PF, TO_PA, PF, PF, TO_PC, PF),
    "CompleteCommit": (PF, ITS, PF, PF, OK, PF),
    "CompleteAbort": (PF, OK, PF, PF, ITS, PF),
    "PrepareCommit": (PF, CT, PF, PF, CT, PF),  # the epoch strictly first, then busy
    "PrepareAbort": (PF, CT, PF, PF, CT, PF),
}
TOPIC_RESOURCE, SET = 2, 0


def held_topic(client: Client) -> str:
    """A topic whose markers wait: min.insync.replicas 2 on one broker (acks=1 data still goes in)."""
    topic = unique_topic("txn-held")
    client.create_topic(topic, configs={"min.insync.replicas": "2"})
    return topic


def release(client: Client, topic: str) -> None:
    r = client.request(44, 1, validate_only=False, resources=[{
        "resource_type": TOPIC_RESOURCE, "resource_name": topic,
        "configs": [{"name": "min.insync.replicas", "config_operation": SET, "value": "1"}]}])
    assert [res.error_code for res in r.responses] == [NONE]


def in_state(client: Client, state: str, version: int, topic: str) -> tuple[str, int, int]:
    """A new transactional id in `state`, reached with EndTxn `version`: (id, producer id, epoch)."""
    tid = txn_id()
    init(client, tid)
    r = init(client, tid)  # epoch 1: one lower is an epoch the id had
    pid, epoch = r.producer_id, r.producer_epoch
    if state == "Empty":
        return tid, pid, epoch
    if version >= 5:
        assert broker_add_partitions(client, 5, tid, pid, epoch, topic, (0,), False) == {0: NONE}
    else:
        assert add_partitions(client, tid, pid, epoch, topic) == [NONE]
    if state == "Ongoing":
        return tid, pid, epoch
    commit = state.endswith("Commit")
    if version >= 5:
        code, _, epoch = end_v2(client, tid, pid, epoch, commit=commit)
    else:
        code = end_txn(client, tid, pid, epoch, commit=commit, version=version)
    assert code == NONE
    state_of(client, tid, state, epoch)
    return tid, pid, epoch


def ask(client: Client, version: int, tid: str, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    if version >= 5:
        return end_v2(client, tid, pid, epoch, commit=commit)
    return end_txn(client, tid, pid, epoch, commit=commit, version=version), -1, -1


def epoch_of(kind: str, epoch: int) -> int:
    return {"current": epoch, "retry": epoch - 1, "other": epoch + 5}[kind]


def check_cell(client: Client, version: int, state: str, tid: str, pid: int, epoch: int, commit: bool, kind: str,
               expected) -> None:
    got = ask(client, version, tid, pid, epoch_of(kind, epoch), commit)
    where = (state, version, "commit" if commit else "abort", kind)
    v5 = version >= 5
    if expected in (TO_PC, TO_PA):
        bumped = epoch + 1 if v5 else epoch
        assert got == ((NONE, pid, bumped) if v5 else (NONE, -1, -1)), where
        state_of(client, tid, "CompleteCommit" if expected == TO_PC else "CompleteAbort", bumped)
    elif expected == OK:
        assert got == ((NONE, pid, epoch) if v5 else (NONE, -1, -1)), where
    else:
        assert got == (expected, -1, -1), where
    if expected not in (TO_PC, TO_PA):
        s = describe(client, tid)
        assert (s.transaction_state, s.producer_epoch) == (state, epoch), where  # nothing written


@pytest.mark.parametrize("version", [4, 5])
@pytest.mark.parametrize("state", ["Empty", "Ongoing", "CompleteCommit", "CompleteAbort"])
def test_end_txn_answers_per_state_epoch_and_result(client, state, version):
    topic = unique_topic("txn-cells")
    client.create_topic(topic)
    for (commit, kind), expected in zip(COLUMNS, (V5 if version >= 5 else V4)[state]):
        tid, pid, epoch = in_state(client, state, version, topic)  # an answer that moves needs its own id
        check_cell(client, version, state, tid, pid, epoch, commit, kind, expected)


@pytest.mark.parametrize("version", [4, 5])
@pytest.mark.parametrize("state", ["PrepareCommit", "PrepareAbort"])
def test_end_txn_answers_while_a_prepared_end_completes(client, state, version):
    topic = held_topic(client)
    tid, pid, epoch = in_state(client, state, version, topic)
    try:
        for (commit, kind), expected in zip(COLUMNS, (V5 if version >= 5 else V4)[state]):
            check_cell(client, version, state, tid, pid, epoch, commit, kind, expected)
    finally:
        release(client, topic)
    state_of(client, tid, state.replace("Prepare", "Complete"), epoch)


def test_the_next_transactions_end_sent_before_its_records_is_retried_until_it_commits(client):
    """The Java client's order (issue 37): EndTxn v5 for the next transaction, before that
    transaction's records, while the last one's markers are still written."""
    held, topic = held_topic(client), unique_topic("txn-next")
    client.create_topic(topic)
    tid = txn_id()
    r = init(client, tid)
    pid, e = r.producer_id, r.producer_epoch

    def produce(name: str, epoch: int, value: bytes, acks: int = -1) -> int:
        batch = build_batch([(None, value)], int(time.time() * 1000), (pid, epoch, 0), True)
        return client.produce(name, 0, bytes(batch), acks=acks, version=12, transactional_id=tid).error_code

    assert produce(held, e, b"first", acks=1) == NONE
    assert end_v2(client, tid, pid, e, commit=True) == (NONE, pid, e + 1)
    state_of(client, tid, "PrepareCommit", e + 1)  # its marker waits
    try:
        assert end_v2(client, tid, pid, e + 1, commit=True) == (CT, -1, -1)  # the next end, early: retry
        assert produce(topic, e + 1, b"second") == CT  # its records: the leader's add is told the same
    finally:
        release(client, topic=held)
    state_of(client, tid, "CompleteCommit", e + 1)
    assert produce(topic, e + 1, b"second") == NONE
    assert end_v2(client, tid, pid, e + 1, commit=True) == (NONE, pid, e + 2)  # the retry commits
    assert stable(client, topic) == 2
    assert marker_epochs(client, topic) == [e + 2]
    assert client.fetch(held, 0, 0).last_stable_offset == client.fetch(held, 0, 0).high_watermark
