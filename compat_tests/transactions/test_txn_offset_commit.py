"""TxnOffsetCommit over a raw socket, both storage layouts: a transaction's offsets are invisible
to OffsetFetch until the transaction coordinator's COMMIT marker reaches the group's
`__consumer_offsets` partition (WriteTxnMarkers, sent here by hand as test_txn_markers.py
does), never visible after an ABORT, and replayed the same way by a restarted broker; a client
asking for stable offsets (OffsetFetch v7+ require_stable) is told UNSTABLE_OFFSET_COMMIT while
a transaction holds one. Every served version of TxnOffsetCommit, with v3's member checks;
v5 (transactions V2) adds the group's offsets partition to the producer's transaction itself,
so its tests run a real transactional id through the coordinator, markers and all.

UNKNOWN_TOPIC_OR_PARTITION 3, ILLEGAL_GENERATION 22, UNKNOWN_MEMBER_ID 25,
INVALID_PRODUCER_EPOCH 47, INVALID_GROUP_ID 24, INVALID_PRODUCER_ID_MAPPING 49,
UNSTABLE_OFFSET_COMMIT 88.
"""

from __future__ import annotations

import pytest

from broker.groups.offsets_log import partition_for
from compat_tests.helpers.group_requests import commit, fetch_committed, new_group, stable_member
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.txn_markers import producer_id
from compat_tests.helpers.txn_offsets import (
    NONE, OFFSETS_TOPIC, UNSTABLE_OFFSET_COMMIT, end_txn, stable_fetch, txn_commit)
from compat_tests.helpers.txn_requests import describe, end_v2, init, state_of, stored_states, txn_id

UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_PRODUCER_EPOCH = 47
INVALID_PRODUCER_ID_MAPPING = 49


def test_offsets_count_only_once_their_transaction_commits(client):
    topic = unique_topic("txo")
    client.create_topic(topic, partitions=2)
    group, pid = new_group(), producer_id(client)
    a, b = (topic, 0), (topic, 1)
    assert commit(client, group, {b: 2}) == {b: NONE}
    assert txn_commit(client, group, pid, {a: 5, b: 6}) == {a: NONE, b: NONE}
    assert fetch_committed(client, group, [a, b]) == {a: (-1, ""), b: (2, "m2")}
    assert stable_fetch(client, group, [a, b]) == {a: (-1, UNSTABLE_OFFSET_COMMIT), b: (-1, UNSTABLE_OFFSET_COMMIT)}
    end_txn(client, group, pid, commit_it=True)
    assert fetch_committed(client, group, [a, b]) == {a: (5, "txn5"), b: (6, "txn6")}
    assert stable_fetch(client, group, [a, b]) == {a: (5, NONE), b: (6, NONE)}
    # the producer's next transaction is aborted: its offsets are never seen
    assert txn_commit(client, group, pid, {a: 50}) == {a: NONE}
    end_txn(client, group, pid, commit_it=False)
    assert stable_fetch(client, group, [a, b]) == {a: (5, NONE), b: (6, NONE)}
    assert fetch_committed(client, group, None) == {a: (5, "txn5"), b: (6, "txn6")}


@pytest.mark.parametrize("version", [7, 8, 9])
def test_require_stable_answers_unstable_offset_commit(client, version):
    topic = unique_topic("txo-stable")
    client.create_topic(topic)
    group, pid = new_group(), producer_id(client)
    assert commit(client, group, {(topic, 0): 1}) == {(topic, 0): NONE}
    assert txn_commit(client, group, pid, {(topic, 0): 9}) == {(topic, 0): NONE}
    assert stable_fetch(client, group, [(topic, 0)], version) == {(topic, 0): (-1, UNSTABLE_OFFSET_COMMIT)}
    assert fetch_committed(client, group, [(topic, 0)], version) == {(topic, 0): (1, "m1")}  # not asked stable
    end_txn(client, group, pid, commit_it=False)
    assert stable_fetch(client, group, [(topic, 0)], version) == {(topic, 0): (1, NONE)}


@pytest.mark.parametrize("how", ["sigterm", "kill-9"])
def test_a_restart_replays_committed_aborted_and_open_transactions(broker, how):
    topic = unique_topic("txo-restart")
    committed, aborted, still_open, plain = ((topic, p) for p in range(4))
    group = new_group()
    with Client.to(broker) as c:
        c.create_topic(topic, partitions=4)
        p1, p2, p3 = producer_id(c), producer_id(c), producer_id(c)
        assert commit(c, group, {plain: 1, aborted: 1}) == {plain: NONE, aborted: NONE}
        assert txn_commit(c, group, p1, {committed: 10}) == {committed: NONE}
        assert txn_commit(c, group, p2, {aborted: 20}) == {aborted: NONE}
        assert txn_commit(c, group, p3, {still_open: 30, plain: 31}) == {still_open: NONE, plain: NONE}
        assert commit(c, group, {plain: 32}) == {plain: NONE}  # later in the log than p3's 31
        end_txn(c, group, p1, commit_it=True)
        end_txn(c, group, p2, commit_it=False)
    if how == "sigterm":
        broker.stop()
    else:
        broker.kill()
    broker.start()
    with Client.to(broker) as c:
        everything = [committed, aborted, still_open, plain]
        assert stable_fetch(c, group, everything) == {
            committed: (10, NONE), aborted: (1, NONE), still_open: (-1, UNSTABLE_OFFSET_COMMIT),
            plain: (-1, UNSTABLE_OFFSET_COMMIT)}
        assert fetch_committed(c, group, everything) == {
            committed: (10, "txn10"), aborted: (1, "m1"), still_open: (-1, ""), plain: (32, "m32")}
        end_txn(c, group, p3, commit_it=True)  # the open one ends after the restart
        assert stable_fetch(c, group, everything) == {
            committed: (10, NONE), aborted: (1, NONE), still_open: (30, NONE), plain: (32, NONE)}


def test_an_older_producer_epoch_is_fenced(client):
    topic = unique_topic("txo-fenced")
    client.create_topic(topic)
    group, pid = new_group(), producer_id(client)
    assert txn_commit(client, group, pid, {(topic, 0): 3}, epoch=1) == {(topic, 0): NONE}
    assert txn_commit(client, group, pid, {(topic, 0): 4}, epoch=0) == {(topic, 0): INVALID_PRODUCER_EPOCH}
    end_txn(client, group, pid, commit_it=True, epoch=1)
    assert fetch_committed(client, group, [(topic, 0)]) == {(topic, 0): (3, "txn3")}


@over_versions(28, hi=4)
def test_txn_offset_commit(client, version):
    topic = unique_topic("txo-v")
    client.create_topic(topic)
    group, pid = new_group(), producer_id(client)
    tp = (topic, 0)
    assert txn_commit(client, "", pid, {tp: 1}, version) == {tp: INVALID_GROUP_ID}
    assert txn_commit(client, group, pid, {tp: 1, (topic, 7): 1, ("no-such-topic", 0): 1}, version) == {
        tp: NONE, (topic, 7): UNKNOWN_TOPIC_OR_PARTITION, ("no-such-topic", 0): UNKNOWN_TOPIC_OR_PARTITION}
    end_txn(client, group, pid, commit_it=True)
    r = client.request(9, 9, require_stable=True, groups=[
        {"group_id": group, "member_id": None, "member_epoch": -1, "topics": [{"name": topic, "partition_indexes": [0]}]}])
    (p,) = r.groups[0].topics[0].partitions
    assert (p.committed_offset, p.metadata, p.committed_leader_epoch) == (1, "txn1", 4 if version >= 2 else -1)
    # a group with a member: v0-v2 name no member and may commit; v3+ are checked as OffsetCommit is
    member, generation = stable_member(client, group)
    if version < 3:
        assert txn_commit(client, group, pid, {tp: 2}, version) == {tp: NONE}
    else:
        assert txn_commit(client, group, pid, {tp: 2}, version, generation=generation + 1,
                          member_id=member) == {tp: ILLEGAL_GENERATION}
        assert txn_commit(client, group, pid, {tp: 2}, version, generation=generation,
                          member_id="stranger") == {tp: UNKNOWN_MEMBER_ID}
        assert txn_commit(client, group, pid, {tp: 2}, version, generation=generation, member_id=member) == {tp: NONE}
    end_txn(client, group, pid, commit_it=True)
    assert fetch_committed(client, group, [tp]) == {tp: (2, "txn2")}


@over_versions(28, lo=5)
def test_txn_offset_commit_v5_adds_the_offsets_partition_to_the_transaction(client, version):
    """Transactions V2: no AddOffsetsToTxn; the group coordinator adds the group's partition of
    __consumer_offsets to the producer's transaction, so EndTxn's markers reach it."""
    topic = unique_topic("txo-v2")
    client.create_topic(topic)
    group, tid = new_group(), txn_id()
    tp = (topic, 0)
    r = init(client, tid)
    pid, e = r.producer_id, r.producer_epoch
    assert txn_commit(client, group, pid, {tp: 2}, version, epoch=e, tid=tid) == {tp: NONE}
    (offsets_topic,) = client.metadata([OFFSETS_TOPIC]).topics
    index = partition_for(group, len(offsets_topic.partitions))
    s = describe(client, tid)
    assert (s.transaction_state, s.topics) == ("Ongoing", [(OFFSETS_TOPIC, (index,))])
    assert stored_states(client, tid)[-1].client_transaction_version == 2
    assert stable_fetch(client, group, [tp]) == {tp: (-1, UNSTABLE_OFFSET_COMMIT)}
    assert end_v2(client, tid, pid, e, commit=True) == (NONE, pid, e + 1)
    state_of(client, tid, "CompleteCommit", e + 1)
    assert stable_fetch(client, group, [tp]) == {tp: (2, NONE)}  # the coordinator's marker settled it

    # a group with a member: checked as OffsetCommit is, before anything is added
    member, generation = stable_member(client, group)
    assert txn_commit(client, group, pid, {tp: 3}, version, epoch=e + 1, generation=generation,
                      member_id="stranger", tid=tid) == {tp: UNKNOWN_MEMBER_ID}
    assert describe(client, tid).transaction_state == "CompleteCommit"
    # the ended transaction's epoch is fenced; an id the coordinator does not know is refused
    assert txn_commit(client, group, pid, {tp: 3}, version, epoch=e, generation=generation, member_id=member,
                      tid=tid) == {tp: INVALID_PRODUCER_EPOCH}
    assert txn_commit(client, group, pid, {tp: 3}, version, epoch=e + 1, generation=generation, member_id=member,
                      tid=txn_id()) == {tp: INVALID_PRODUCER_ID_MAPPING}
    # the next transaction, at the bumped epoch, aborted: its offset never counts
    assert txn_commit(client, group, pid, {tp: 4}, version, epoch=e + 1, generation=generation, member_id=member,
                      tid=tid) == {tp: NONE}
    assert end_v2(client, tid, pid, e + 1, commit=False) == (NONE, pid, e + 2)
    state_of(client, tid, "CompleteAbort", e + 2)
    assert stable_fetch(client, group, [tp]) == {tp: (2, NONE)}
