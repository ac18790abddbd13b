"""Partition state changes as compare-and-swap against a real etcd: AlterPartition races,
fencing of stale leaders and of writers whose key incarnation is gone, preferred election."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from broker.cluster import ClusterError
from broker.cluster.etcd_store import Guard

from broker.cluster.tests.harness import Members, run
from wire.error_codes import ErrorCode


def _has(image, topic: str, **want) -> bool:
    """Whether the image holds topic-0 with these fields: a member's image may not have the topic
    yet when the call that created it returns (its watch applies it a moment later)."""
    state = image.partition(topic, 0)
    return state is not None and all(getattr(state, k) == v for k, v in want.items())


def test_two_alter_partitions_on_one_partition_epoch_exactly_one_wins(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            await members.start(1, 2, 3)
            leader = members.live[1]
            await leader.create_topic("race", 1, 3, {}, "segment", assignments=[[1, 2, 3]])
            outcomes = await asyncio.gather(
                leader.alter_partition("race", 0, 0, 0, [1, 2]),
                leader.alter_partition("race", 0, 0, 0, [1, 3]),
                return_exceptions=True)
            won = [o for o in outcomes if not isinstance(o, Exception)]
            lost = [o for o in outcomes if isinstance(o, Exception)]
            assert len(won) == 1 and won[0].partition_epoch == 1
            assert len(lost) == 1 and isinstance(lost[0], ClusterError) and lost[0].code == ErrorCode.invalid_update_version
            image = await members.live[2].wait_for(lambda im: _has(im, "race", partition_epoch=1), 5)
            assert image.partition("race", 0).isr == won[0].isr
    run(scenario())


def test_deposed_leader_is_fenced_by_leader_epoch(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            await members.start(1, 2, 3)
            leader = members.live[1]
            await leader.create_topic("fence", 1, 3, {}, "segment", assignments=[[1, 2, 3]])
            await leader.alter_partition("fence", 0, 0, 0, [1, 2])    # 3 left the ISR
            await members.live[2].wait_for(lambda im: _has(im, "fence", partition_epoch=1), 5)
            await members.crash(1)
            observer = members.live[2]
            await observer.wait_for(lambda im: _has(im, "fence", leader=2), 5)
            with pytest.raises(ClusterError) as exc:  # 2 still uses the epoch it knew as follower
                await observer.alter_partition("fence", 0, 0, 1, [2])
            assert exc.value.code == ErrorCode.fenced_leader_epoch
            state = observer.image.partition("fence", 0)
            grown = await observer.alter_partition("fence", 0, state.leader_epoch, state.partition_epoch, [2, 3])
            assert grown.isr == (2, 3) and grown.partition_epoch == state.partition_epoch + 1
    run(scenario())


def test_a_guard_refuses_writes_once_its_key_was_recreated(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            member, = await members.start(1)
            await member.create_topic("guarded", 1, 1, {}, "segment")
            store = member._store
            key = (prefix + "marker").encode()
            await store.client.put(key, b"1")
            first = await store.client.get(key)
            guard = Guard(key, first.create_revision, ErrorCode.stale_broker_epoch, "gone")
            await store.client.delete(key)
            await store.client.put(key, b"1")  # same value, new incarnation
            with pytest.raises(ClusterError) as exc:
                await store.update_partition("guarded", 0, lambda s: replace(s, partition_epoch=9), [guard])
            assert exc.value.code == ErrorCode.stale_broker_epoch
            assert (await store.client.get(store.layout.partition_key("guarded", 0))).version == 1
    run(scenario())


def test_preferred_election_brings_leadership_back(etcd, prefix):
    async def scenario():
        async with Members(etcd.endpoint, prefix) as members:
            await members.start(1, 2, 3)
            observer = members.live[3]
            await observer.create_topic("pref", 1, 3, {}, "segment", assignments=[[1, 2, 3]])
            await members.crash(1)
            image = await observer.wait_for(lambda im: _has(im, "pref", leader=2), 5)
            await members.start(1)
            with pytest.raises(ClusterError) as exc:  # back, but not in the ISR yet
                await observer.elect_preferred("pref", 0)
            assert exc.value.code == ErrorCode.preferred_leader_not_available
            state = image.partition("pref", 0)
            leader = members.live[2]
            await leader.alter_partition("pref", 0, state.leader_epoch, state.partition_epoch, [2, 3, 1])
            elected = await observer.elect_preferred("pref", 0)
            assert (elected.leader, elected.leader_epoch) == (1, state.leader_epoch + 1)
            with pytest.raises(ClusterError) as exc:
                await observer.elect_preferred("pref", 0)
            assert exc.value.code == ErrorCode.election_not_needed
    run(scenario())
