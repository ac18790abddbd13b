"""Transactions in a three-broker cluster (both layouts): the coordinator of a transactional id is
the leader of its `__transaction_state` partition, markers for partitions led by other brokers go
as WriteTxnMarkers over the inter-broker listener, and when the coordinator's broker is killed
the new leader of that partition loads the id and a restarted producer's open transaction is
aborted there, while committed records stay readable; a commit it had prepared but not yet
marked is completed there. A partition's leader verifies a transaction's first batch with a
coordinator on another broker (KIP-890), and under transactions V2 asks it to add the partition;
a V2 transaction open when its coordinator's broker is killed is ended by the next one with the
epoch bump, and the old epoch stays fenced there.
"""

from __future__ import annotations

import os
import re
import signal
import time
import uuid

import pytest
from confluent_kafka import Producer

from compat_tests.helpers.broker_process import STORAGE_MODES
from compat_tests.helpers.cluster import running_cluster
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.transform_app import partition_output
from compat_tests.helpers.txn_requests import coordinator_of
from compat_tests.helpers.waiting import wait_until
from wire.batch_builder import build_batch

PARTITIONS = 3
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS = 16, 14


@pytest.fixture(params=STORAGE_MODES)
def cluster(request):
    with running_cluster(request.param, extra_args=("--transaction-state-log-partitions", "3",
                                                    "--offsets-topic-partitions", "3")) as c:
        yield c


def producer(bootstrap: str, tid: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "client.id": "compat-cluster-txn"})


def test_markers_reach_partitions_led_by_other_brokers(cluster):
    topic = unique_topic("ctxn")
    cluster.create_topic(topic, partitions=PARTITIONS)
    leaders = {cluster.leader(topic, i) for i in range(PARTITIONS)}
    tid = f"ctx-{uuid.uuid4().hex[:8]}"
    p = producer(cluster.bootstrap, tid)
    p.init_transactions(60)
    assert len(leaders) > 1 or leaders != {coordinator_of(cluster, tid)}  # some marker must travel
    p.begin_transaction()
    for i in range(PARTITIONS):
        p.produce(topic, value=b"kept-%d" % i, partition=i)
    p.commit_transaction(60)
    p.begin_transaction()
    for i in range(PARTITIONS):
        p.produce(topic, value=b"dropped-%d" % i, partition=i)
    p.flush(60)
    p.abort_transaction(60)
    for i in range(PARTITIONS):
        assert partition_output(cluster.bootstrap, topic, i, "read_committed") == [b"kept-%d" % i]


def test_a_killed_coordinators_open_transaction_is_aborted_by_the_new_one(cluster):
    topic = unique_topic("ctxn-kill")
    cluster.create_topic(topic, partitions=PARTITIONS)
    tid = f"ctx-{uuid.uuid4().hex[:8]}"
    p = producer(cluster.bootstrap, tid)
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(PARTITIONS):
        p.produce(topic, value=b"committed-%d" % i, partition=i)
    p.commit_transaction(60)
    p.begin_transaction()
    for i in range(PARTITIONS):
        p.produce(topic, value=b"open-%d" % i, partition=i)
    p.flush(60)
    old = coordinator_of(cluster, tid)
    cluster.brokers[old].kill()
    bootstrap = ",".join(f"{b.host}:{b.port}" for n, b in cluster.brokers.items() if n != old)
    # a new leader of the id's partition coordinates it, once the dead broker's session expires
    wait_until(lambda: coordinator_of(cluster, tid) != old, what="a new transaction coordinator", timeout=60)
    again = producer(bootstrap, tid)  # the application restarts its producer
    again.init_transactions(120)  # the new coordinator fences the old producer and aborts its transaction
    again.begin_transaction()
    for i in range(PARTITIONS):
        again.produce(topic, value=b"after-%d" % i, partition=i)
    again.commit_transaction(120)
    for i in range(PARTITIONS):
        assert partition_output(bootstrap, topic, i, "read_committed") == [b"committed-%d" % i, b"after-%d" % i]


def test_a_new_coordinator_completes_the_prepare_commit_it_finds(cluster):
    """EndTxn(commit) is answered once PrepareCommit is in the log; the marker cannot be written
    yet, the data partition's only replica being SIGSTOPped, when the coordinator's broker is
    killed. The next leader of the id's `__transaction_state` partition finds the PrepareCommit,
    writes the marker once the partition is back, and read_committed sees the records."""
    topic = unique_topic("ctxn-prepared")
    cluster.create_topic(topic, partitions=1, replication_factor=1)  # no other broker can take the marker
    data_leader = cluster.leader(topic)
    tid = next(t for t in (f"ctx-{uuid.uuid4().hex[:8]}" for _ in range(50))
               if coordinator_of(cluster, t) != data_leader)
    p = producer(cluster.bootstrap, tid)
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=b"prepared-%d" % i, partition=0)
    assert p.flush(60) == 0
    old = coordinator_of(cluster, tid)
    stopped = cluster.brokers[data_leader]
    os.kill(stopped.pid, signal.SIGSTOP)
    try:
        p.commit_transaction(60)
        cluster.brokers[old].kill()
    finally:
        os.kill(stopped.pid, signal.SIGCONT)
    new = wait_until(lambda: (node := coordinator_of(cluster, tid)) != old and node,
                     what="a new transaction coordinator", timeout=60)
    log = cluster.brokers[new].log_text
    # its marker is written once the stopped broker leads the partition again (a read before
    # then meets NOT_LEADER_OR_FOLLOWER)
    wait_until(lambda: re.search(rf"transactional id {tid}: producer \d+ epoch \d+ CompleteCommit", log()),
               what="the new coordinator completing the commit", timeout=60)
    assert f"transactional id {tid}: completing its PrepareCommit found in the log" in log()
    bootstrap = ",".join(f"{b.host}:{b.port}" for n, b in cluster.brokers.items() if n != old)
    assert partition_output(bootstrap, topic, 0, "read_committed") == [b"prepared-%d" % i for i in range(3)]


def test_a_leader_verifies_a_transactions_first_batch_with_a_remote_coordinator(cluster):
    """The leader of a partition asks the coordinator on another broker (AddPartitionsToTxn v5
    over the inter-broker listener): a partition never added is refused with INVALID_TXN_STATE,
    an added one accepted."""
    topic = unique_topic("cverify")
    cluster.create_topic(topic, partitions=PARTITIONS)
    tid = f"cvf-{uuid.uuid4().hex[:8]}"
    coordinator = coordinator_of(cluster, tid)
    index = next((i for i in range(PARTITIONS) if cluster.leader(topic, i) != coordinator), None)
    while index is None:  # every partition led by the coordinator: another id, another coordinator
        tid = f"cvf-{uuid.uuid4().hex[:8]}"
        coordinator = coordinator_of(cluster, tid)
        index = next((i for i in range(PARTITIONS) if cluster.leader(topic, i) != coordinator), None)
    coord = cluster.brokers[coordinator]
    leader = cluster.brokers[cluster.leader(topic, index)]
    with Client(coord.host, coord.port) as c, Client(leader.host, leader.port) as lc:
        def init():  # as a client, until the broker FindCoordinator named has applied its leadership
            r = c.request(22, 4, transactional_id=tid, transaction_timeout=60_000, producer_id=-1, producer_epoch=-1)
            return None if r.error_code in (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) else r
        r = wait_until(init, f"{coordinator} coordinating {tid}")
        assert r.error_code == 0
        pid, epoch = r.producer_id, r.producer_epoch

        def produce(seq: int) -> int:
            batch = build_batch([(None, b"v")], int(time.time() * 1000), (pid, epoch, seq), True)
            return lc.produce(topic, index, bytes(batch), transactional_id=tid).error_code

        assert produce(0) == INVALID_TXN_STATE
        added = c.request(24, 3, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                          v3_and_below_producer_epoch=epoch,
                          v3_and_below_topics=[{"name": topic, "partitions": [index]}])
        assert [p.partition_error_code for t in added.results_by_topic_v3_and_below
                for p in t.results_by_partition] == [0]
        assert produce(0) == 0
        assert c.request(26, 4, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                         committed=True).error_code == 0


def test_a_v2_transaction_outlives_its_coordinators_broker(cluster):
    """Transactions V2 across a coordinator failover, with raw requests as a V2 client sends them:
    Produce v12 has leaders on other brokers add the partitions (AddPartitionsToTxn v5, not
    verify-only); the coordinator's broker is killed with the transaction open; the next leader of
    the id's __transaction_state partition loads it (the records carry the client's transaction
    version) and ends it with EndTxn v5's epoch bump: the records are committed, the retried end
    gets the same answer, and a write at the old epoch is refused."""
    topic = unique_topic("ctxn-v2")
    cluster.create_topic(topic, partitions=PARTITIONS)
    while True:  # an id whose coordinator leads none of the partitions written: they outlive it
        tid = f"cv2-{uuid.uuid4().hex[:8]}"
        old = coordinator_of(cluster, tid)
        written = [i for i in range(PARTITIONS) if cluster.leader(topic, i) != old]
        if len(written) >= 2:
            break
    c = cluster.brokers[old]
    with Client(c.host, c.port) as cc:
        def init():
            r = cc.request(22, 5, transactional_id=tid, transaction_timeout=60_000, producer_id=-1, producer_epoch=-1)
            return None if r.error_code in (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) else r
        r = wait_until(init, f"{old} coordinating {tid}")
        assert r.error_code == 0
    pid, epoch = r.producer_id, r.producer_epoch

    def produce(index: int, producer_epoch: int, value: bytes) -> int:
        leader = cluster.brokers[cluster.leader(topic, index)]
        batch = build_batch([(None, value)], int(time.time() * 1000), (pid, producer_epoch, 0), True)
        with Client(leader.host, leader.port) as lc:
            return lc.produce(topic, index, bytes(batch), version=12, transactional_id=tid).error_code

    for i in written:
        assert produce(i, epoch, b"v2-%d" % i) == 0
    cluster.brokers[old].kill()
    new = wait_until(lambda: (node := coordinator_of(cluster, tid)) != old and node,
                     what="a new transaction coordinator", timeout=60)
    n = cluster.brokers[new]
    with Client(n.host, n.port) as nc:
        def end(producer_epoch: int, commit: bool):
            r = nc.request(26, 5, transactional_id=tid, producer_id=pid, producer_epoch=producer_epoch,
                           committed=commit)
            return None if r.error_code in (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) else r
        ended = wait_until(lambda: end(epoch, True), f"{new} ending {tid}'s transaction", timeout=60)
        assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (0, pid, epoch + 1)
        bootstrap = ",".join(f"{b.host}:{b.port}" for node, b in cluster.brokers.items() if node != old)
        for i in written:
            assert partition_output(bootstrap, topic, i, "read_committed") == [b"v2-%d" % i]
        retried = end(epoch, True)  # its answer lost: the same answer, from the loaded records
        assert (retried.error_code, retried.producer_id, retried.producer_epoch) == (0, pid, epoch + 1)
        assert produce(written[0], epoch, b"late") == INVALID_PRODUCER_EPOCH
        assert produce(written[1], epoch + 1, b"next") == 0  # the next transaction, at the new epoch
        aborted = end(epoch + 1, False)
        assert (aborted.error_code, aborted.producer_epoch) == (0, epoch + 2)
    assert partition_output(bootstrap, topic, written[1], "read_committed") == [b"v2-%d" % written[1]]
