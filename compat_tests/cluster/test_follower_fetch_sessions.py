"""Incremental fetch sessions (KIP-227) between a follower and a real leader process: the
leader's side over a raw socket (broker/fetch_sessions.py), the follower's through
NetworkLeaderEndpoint (replica/fetch_session.py), in each storage layout.

A single broker leads every partition, and answers a Fetch with replica_id >= 0 as it answers
a follower's: that is all a session needs.
"""

from __future__ import annotations

import asyncio

import pytest

from compat_tests.helpers.raw_kafka import Client, fetch_values, make_batch, split_batches
from compat_tests.helpers.topics import unique_topic
from replica.leader_endpoint import UNCHANGED, FetchPartition, NetworkLeaderEndpoint, TopicPartition
from wire.error_codes import ErrorCode

FOLLOWER_ID = 2
NONE, FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH = 0, 70, 71


def _topic(client: Client, partitions: int) -> str:
    name = unique_topic("sessions")
    client.create_topic(name, partitions)
    for p in range(partitions):
        assert client.produce(name, p, make_batch([b"first-%d" % p])).error_code == NONE
    return name


def _fetch(client: Client, version: int, topic: str, parts, session_id: int, epoch: int, forgotten=(),
           replica_id: int = FOLLOWER_ID):
    """parts: [(partition, offset)] -> the response, as a follower (or a consumer) asks."""
    ids = {topic: client.topic_id(topic)} if version >= 13 else None
    values = fetch_values([(topic, [(p, offset, 1 << 20) for p, offset in parts])] if parts else [],
                          topic_ids=ids)
    values.update(replica_id=replica_id, session_id=session_id, session_epoch=epoch)
    if forgotten:
        values["forgotten_topics_data"] = [{"topic": topic, "topic_id": ids and ids[topic],
                                            "partitions": list(forgotten)}]
    return client.request(1, version, **values)


def _answered(response) -> dict[int, object]:
    return {p.partition_index: p for t in response.responses for p in t.partitions}


@pytest.mark.parametrize("version", [12, 13])  # topics by name, then by topic id (KIP-516)
def test_an_incremental_fetch_names_and_answers_only_what_changed(broker, version):
    with Client(broker.host, broker.port) as client:
        topic = _topic(client, 3)
        full = _fetch(client, version, topic, [(0, 0), (1, 0), (2, 0)], session_id=0, epoch=0)
        assert full.error_code == NONE and full.session_id != 0
        assert sorted(_answered(full)) == [0, 1, 2]  # a full answer names every partition
        session = full.session_id

        # Caught up everywhere, nothing named: nothing changed, nothing answered.
        quiet = _fetch(client, version, topic, [(0, 1), (1, 1), (2, 1)], session, 1)
        assert (quiet.error_code, quiet.session_id) == (NONE, session)
        assert _answered(quiet) == {}  # the HW (1) was told in the full answer
        quiet = _fetch(client, version, topic, [], session, 2)
        assert _answered(quiet) == {}

        # An append to partition 1 alone: the session's offsets bring it, and only it.
        assert client.produce(topic, 1, make_batch([b"second"])).error_code == NONE
        news = _fetch(client, version, topic, [], session, 3)
        answered = _answered(news)
        assert list(answered) == [1]
        batches, _ = split_batches(answered[1].records)
        assert [int.from_bytes(b[:8], "big") for b in batches] == [1]

        # Forgotten partitions are no longer read; a partition named again is.
        assert _answered(_fetch(client, version, topic, [(1, 2)], session, 4, forgotten=[0, 2])) == {}
        assert client.produce(topic, 0, make_batch([b"unasked"])).error_code == NONE
        assert _answered(_fetch(client, version, topic, [], session, 5)) == {}
        again = _answered(_fetch(client, version, topic, [(0, 1)], session, 6))
        assert list(again) == [0] and split_batches(again[0].records)[0]


def test_session_errors_are_kafkas(broker):
    with Client(broker.host, broker.port) as client:
        topic = _topic(client, 1)
        session = _fetch(client, 12, topic, [(0, 0)], session_id=0, epoch=0).session_id
        assert session != 0
        stale = _fetch(client, 12, topic, [(0, 1)], session, 5)  # it expects epoch 1
        assert (stale.error_code, stale.session_id, stale.responses) == (INVALID_FETCH_SESSION_EPOCH, 0, ())
        assert _fetch(client, 12, topic, [(0, 1)], session, 1).error_code == NONE  # the session lives on
        unknown = _fetch(client, 12, topic, [(0, 1)], session ^ 0x5A5A, 1)
        assert unknown.error_code == FETCH_SESSION_ID_NOT_FOUND
        other_follower = _fetch(client, 12, topic, [(0, 1)], session, 2, replica_id=FOLLOWER_ID + 1)
        assert other_follower.error_code == FETCH_SESSION_ID_NOT_FOUND  # a session is its follower's
        # A full request naming the session closes it and opens another.
        reopened = _fetch(client, 12, topic, [(0, 1)], session, 0)
        assert reopened.error_code == NONE and reopened.session_id not in (0, session)
        assert _fetch(client, 12, topic, [], session, 2).error_code == FETCH_SESSION_ID_NOT_FOUND
        # Epoch -1 closes it too, and answers outside any session.
        closing = _fetch(client, 12, topic, [(0, 1)], reopened.session_id, -1)
        assert (closing.error_code, closing.session_id) == (NONE, 0)
        assert _fetch(client, 12, topic, [], reopened.session_id, 1).error_code == FETCH_SESSION_ID_NOT_FOUND


def test_a_consumer_gets_no_session(broker):
    with Client(broker.host, broker.port) as client:
        topic = _topic(client, 1)
        r = _fetch(client, 12, topic, [(0, 0)], session_id=0, epoch=0, replica_id=-1)
        assert (r.error_code, r.session_id) == (NONE, 0) and list(_answered(r)) == [0]


def _endpoint(broker) -> NetworkLeaderEndpoint:
    return NetworkLeaderEndpoint(broker.host, broker.port, FOLLOWER_ID, max_wait_ms=100)


def test_the_followers_endpoint_fetches_in_a_session(broker):
    with Client(broker.host, broker.port) as client:
        topic = _topic(client, 3)
    tps = [TopicPartition(topic, p) for p in range(3)]

    async def go():
        endpoint = _endpoint(broker)
        try:
            first = await endpoint.fetch([FetchPartition(tp, 0, 0) for tp in tps])
            session = endpoint.session.session_id
            with Client(broker.host, broker.port) as client:
                await asyncio.to_thread(client.produce, topic, 2, make_batch([b"second"]))
            second = await endpoint.fetch([FetchPartition(tp, 1, 0) for tp in tps])
            third = await endpoint.fetch([FetchPartition(tp, 1, 0) for tp in tps[:2]] + [FetchPartition(tps[2], 2, 0)])
            return first, session, second, third, endpoint.session
        finally:
            await endpoint.close()

    first, session, second, third, ended = asyncio.run(go())
    assert session != 0 and ended.session_id == session and ended.epoch == 3
    assert all(first[tp].error is ErrorCode.none and split_batches(first[tp].records)[0] for tp in tps)
    # The leader left partitions 0 and 1 out: caught up, no news; partition 2 has its append.
    assert second[tps[0]] is UNCHANGED and second[tps[1]] is UNCHANGED
    assert second[tps[2]].high_watermark == 2 and split_batches(second[tps[2]].records)[0]
    assert all(third[tp] is UNCHANGED for tp in tps)


def test_a_follower_whose_session_the_leader_evicted_starts_a_new_one(broker_factory):
    """A leader with room for one session evicts ours for another follower's: our next
    incremental fetch meets FETCH_SESSION_ID_NOT_FOUND, which answers no partition (nothing is
    delayed), and the next fetch, full, opens a new session."""
    leader = broker_factory("--max-incremental-fetch-session-cache-slots", "1")
    with Client(leader.host, leader.port) as client:
        topic = _topic(client, 2)
    tps = [TopicPartition(topic, p) for p in range(2)]

    async def go():
        endpoint = _endpoint(leader)
        try:
            await endpoint.fetch([FetchPartition(tp, 0, 0) for tp in tps])
            before = endpoint.session.session_id
            with Client(leader.host, leader.port) as client:  # another follower takes the one slot
                taken = await asyncio.to_thread(_fetch, client, 12, topic, [(0, 0)], 0, 0, (), FOLLOWER_ID + 1)
            lost = await endpoint.fetch([FetchPartition(tp, 1, 0) for tp in tps])
            after_error = (endpoint.session.session_id, endpoint.session.epoch)
            renewed = await endpoint.fetch([FetchPartition(tp, 1, 0) for tp in tps])
            return before, taken.session_id, lost, after_error, renewed, endpoint.session.session_id
        finally:
            await endpoint.close()

    before, taken, lost, after_error, renewed, now = asyncio.run(go())
    assert before != 0 and taken not in (0, before)
    assert all(lost[tp] is UNCHANGED for tp in tps)
    assert after_error == (0, 0)  # no session: the next request is full and asks for one
    assert all(renewed[tp].error is ErrorCode.none and renewed[tp].high_watermark == 1 for tp in tps)
    assert now not in (0, before)


def test_a_follower_whose_leader_restarted_reopens_its_session(fresh_broker):
    """No answer came (the leader went away): the next request is full, naming the old session
    (closing it if the leader still has it) and asking for a new one."""
    with Client(fresh_broker.host, fresh_broker.port) as client:
        topic = _topic(client, 2)
    tps = [TopicPartition(topic, p) for p in range(2)]

    async def go():
        endpoint = _endpoint(fresh_broker)
        try:
            await endpoint.fetch([FetchPartition(tp, 0, 0) for tp in tps])
            before = endpoint.session.session_id
            await asyncio.to_thread(fresh_broker.stop)
            with pytest.raises(ConnectionError):
                await endpoint.fetch([FetchPartition(tp, 1, 0) for tp in tps])
            after_failure = (endpoint.session.session_id, endpoint.session.epoch)
            await asyncio.to_thread(fresh_broker.start)
            while True:  # the first attempts may meet the reconnect backoff
                try:
                    renewed = await endpoint.fetch([FetchPartition(tp, 1, 0) for tp in tps])
                    break
                except ConnectionError:
                    await asyncio.sleep(0.05)
            return before, after_failure, renewed, endpoint.session.session_id
        finally:
            await endpoint.close()

    before, after_failure, renewed, now = asyncio.run(go())
    assert before != 0 and after_failure == (before, 0)
    assert all(renewed[tp].error is ErrorCode.none and renewed[tp].high_watermark == 1 for tp in tps)
    assert now not in (0, before)
