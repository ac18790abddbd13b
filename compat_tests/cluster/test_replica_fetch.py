"""A follower's side of replication over the wire: replica.leader_endpoint.NetworkLeaderEndpoint
and the ReplicaFetcher over it, against a real `twinlog serve` process in each storage mode.

A single broker leads every partition in epoch 0 and answers a Fetch with replica_id >= 0 up
to its log end offset, which is all a follower needs from its leader here. OffsetForLeaderEpoch
is covered by the codec tests (wire/tests/test_client_codec.py) until the broker serves it;
here an empty follower has no epoch to ask about, so the fetcher goes straight to fetching.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.raw_kafka import Client, make_batch, split_batches
from compat_tests.helpers.topics import unique_topic
from replica.fetcher import ReplicaFetcher
from replica.leader_endpoint import FetchPartition, NetworkLeaderEndpoint, TopicPartition
from replica.tests.memory_replicas import MemoryFollower
from wire.error_codes import ErrorCode

FOLLOWER_ID = 2


def topic_with(broker: BrokerProcess, batches: list[list[bytes]], partitions: int = 1) -> str:
    """A new topic whose partition 0 holds these batches (each a list of values)."""
    name = unique_topic("endpoint")
    with Client(broker.host, broker.port) as client:
        client.create_topic(name, partitions)
        for values in batches:
            assert client.produce(name, 0, make_batch(values)).error_code == 0
    return name


def stored(broker: BrokerProcess, topic: str, partition: int = 0) -> bytes:
    """The partition's batches as a consumer reads them (replica_id -1, up to the HW)."""
    with Client(broker.host, broker.port) as client:
        return client.stored_bytes(topic, partition)


def endpoint_to(broker: BrokerProcess, **kw) -> NetworkLeaderEndpoint:
    return NetworkLeaderEndpoint(broker.host, broker.port, FOLLOWER_ID, **kw)


def test_a_replica_fetch_returns_the_stored_batches_byte_for_byte(broker):
    topic = topic_with(broker, [[b"a", b"b"], [b"c"], [b"d" * 5000, b"e"]])
    tp = TopicPartition(topic, 0)

    async def go():
        endpoint = endpoint_to(broker)
        try:
            return await endpoint.fetch([FetchPartition(tp, 0, current_leader_epoch=0)])
        finally:
            await endpoint.close()

    result = asyncio.run(go())[tp]
    assert (result.error, result.high_watermark, result.log_start_offset) == (ErrorCode.none, 5, 0)
    assert result.records == stored(broker, topic)
    batches, partial = split_batches(result.records)
    assert len(batches) == 3 and partial == b""


def test_errors_come_back_per_partition(broker):
    topic = topic_with(broker, [[b"a"]], partitions=3)
    fenced, out_of_range, fine = (TopicPartition(topic, i) for i in range(3))

    async def go():
        endpoint = endpoint_to(broker, max_wait_ms=100)
        try:
            return await endpoint.fetch([FetchPartition(fenced, 0, current_leader_epoch=7),
                                         FetchPartition(out_of_range, 5, current_leader_epoch=0),
                                         FetchPartition(fine, 0, current_leader_epoch=0)])
        finally:
            await endpoint.close()

    results = asyncio.run(go())
    assert results[fenced].error is ErrorCode.unknown_leader_epoch  # an epoch the leader has not reached
    assert results[out_of_range].error is ErrorCode.offset_out_of_range
    assert results[out_of_range].log_start_offset == 0
    assert (results[fine].error, results[fine].records) == (ErrorCode.none, b"")


def test_requests_in_flight_together_each_get_their_own_answer(broker):
    topic = topic_with(broker, [[b"%d" % i] for i in range(6)])
    tp = TopicPartition(topic, 0)

    async def go():
        endpoint = endpoint_to(broker, partition_max_bytes=1)  # one batch per answer
        try:
            return await asyncio.gather(*(endpoint.fetch([FetchPartition(tp, offset, 0)]) for offset in range(6)))
        finally:
            await endpoint.close()

    answers = asyncio.run(go())
    firsts = [split_batches(a[tp].records)[0][0] for a in answers]
    assert [int.from_bytes(b[:8], "big") for b in firsts] == list(range(6))


def test_a_long_poll_waits_for_an_append_and_wakes_on_it(broker):
    topic = topic_with(broker, [[b"first"]])
    tp = TopicPartition(topic, 0)

    def produce_later():
        time.sleep(0.3)  # after the follower's fetch is parked on the leader: the delay under test
        with Client(broker.host, broker.port) as client:
            assert client.produce(topic, 0, make_batch([b"second"])).error_code == 0

    async def go():
        endpoint = endpoint_to(broker, max_wait_ms=250)
        try:
            start = time.monotonic()
            empty = await endpoint.fetch([FetchPartition(tp, 1, 0)])
            waited = time.monotonic() - start
            endpoint_long = endpoint_to(broker, max_wait_ms=10_000, request_timeout_ms=20_000)
            producer = asyncio.create_task(asyncio.to_thread(produce_later))
            start = time.monotonic()
            woken = await endpoint_long.fetch([FetchPartition(tp, 1, 0)])
            await producer
            await endpoint_long.close()
            return empty, waited, woken, time.monotonic() - start
        finally:
            await endpoint.close()

    empty, waited, woken, woke_after = asyncio.run(go())
    assert empty[tp].records == b"" and 0.2 <= waited < 2.0
    assert split_batches(woken[tp].records)[0] and woke_after < 5.0


def test_a_leader_that_goes_away_fails_requests_and_is_reconnected_when_back(fresh_broker):
    topic = topic_with(fresh_broker, [[b"a"]])
    tp = TopicPartition(topic, 0)

    async def go():
        endpoint = endpoint_to(fresh_broker, max_wait_ms=100)
        try:
            assert (await endpoint.fetch([FetchPartition(tp, 0, 0)]))[tp].error is ErrorCode.none
            await asyncio.to_thread(fresh_broker.stop)
            with pytest.raises(ConnectionError):
                await endpoint.fetch([FetchPartition(tp, 0, 0)])
            with pytest.raises(ConnectionError):  # refused: nothing listens on the port
                await endpoint.fetch([FetchPartition(tp, 0, 0)])
            await asyncio.to_thread(fresh_broker.start)
            return await endpoint.fetch([FetchPartition(tp, 0, 0)])
        finally:
            await endpoint.close()

    assert asyncio.run(go())[tp].records == stored(fresh_broker, topic)


def test_a_frozen_leader_times_out_and_is_used_again_once_it_thaws(fresh_broker):
    topic = topic_with(fresh_broker, [[b"a"]])
    tp = TopicPartition(topic, 0)

    async def go():
        endpoint = endpoint_to(fresh_broker, max_wait_ms=100, request_timeout_ms=1_000)
        try:
            os.kill(fresh_broker.pid, signal.SIGSTOP)  # cleanup's SIGKILL ends it even if frozen
            start = time.monotonic()
            with pytest.raises(ConnectionError):
                await endpoint.fetch([FetchPartition(tp, 0, 0)])
            timed_out_after = time.monotonic() - start
            os.kill(fresh_broker.pid, signal.SIGCONT)
            return timed_out_after, await endpoint.fetch([FetchPartition(tp, 0, 0)])
        finally:
            await endpoint.close()

    timed_out_after, result = asyncio.run(go())
    assert 0.9 <= timed_out_after < 3.0
    assert result[tp].records == stored(fresh_broker, topic)


def test_the_fetcher_replicates_a_live_partition_over_the_wire(broker):
    topic = topic_with(broker, [[b"x%d" % i for i in range(3)]])
    tp = TopicPartition(topic, 0)
    follower = MemoryFollower()

    async def go():
        fetcher = ReplicaFetcher(endpoint_to(broker, max_wait_ms=100), backoff_ms=100)
        fetcher.start()
        fetcher.add_partitions({tp: (follower, 0)})
        with Client(broker.host, broker.port) as client:
            for i in range(20):
                await asyncio.to_thread(client.produce, topic, 0, make_batch([b"y%d" % i] * (1 + i % 4)))
        deadline = time.monotonic() + 10
        while follower.log_end_offset < 3 + sum(1 + i % 4 for i in range(20)) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await fetcher.close()

    asyncio.run(go())
    assert follower.log.as_bytes() == stored(broker, topic)
    assert follower.high_watermark == follower.log_end_offset
