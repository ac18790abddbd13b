"""Hypothesis state walks of the fetcher against the in-memory leader.

1. Any interleaving of leader appends, leader re-elections (a new epoch, same leader) and
   fetch rounds, with responses cut at any size: the follower's log is always a byte-for-byte
   prefix of the leader's, it never truncates, its HW never passes its LEO or the leader's HW,
   and once the leader stops it catches up exactly.
2. Any history of two replicas taking turns as leader, each new leader writing in its own
   epoch and the other copying some prefix of its log: when one of them follows the other,
   it ends up byte for byte equal to the leader and never cuts below its high watermark.
"""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from replica.fetcher import ReplicaFetcher
from replica.tests.memory_replicas import TP, LeaderReplica, MemoryFollower, MemoryLeader, MemoryLog, make_batch


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def catch_up(fetcher: ReplicaFetcher, clock: Clock, follower: MemoryFollower, leader: LeaderReplica) -> None:
    for _ in range(60):
        await fetcher.run_round()
        clock.now += 2.0
        if follower.log_end_offset == leader.log.end and not any(
                s.truncating for s in fetcher._states.values()):
            return


appends = st.tuples(st.just("append"), st.integers(1, 5))
rounds = st.tuples(st.just("round"), st.just(0))
elections = st.tuples(st.just("elect"), st.just(0))


@settings(max_examples=150)
@given(steps=st.lists(st.one_of(appends, rounds, rounds, elections), max_size=40),
       partition_max_bytes=st.integers(1, 600), partial_tails=st.booleans())
def test_the_follower_is_always_a_prefix_of_the_leader_and_catches_up(steps, partition_max_bytes, partial_tails):
    endpoint = MemoryLeader(partition_max_bytes=partition_max_bytes, partial_tails=partial_tails)
    leader = LeaderReplica()
    leader.become_leader(0)
    endpoint.replicas[TP] = leader
    follower = MemoryFollower()
    clock = Clock()

    async def walk():
        fetcher = ReplicaFetcher(endpoint, clock=clock)
        fetcher.add_partitions({TP: (follower, 0)})
        for action, n in steps:
            if action == "append":
                leader.append(n)
            elif action == "elect":
                leader.become_leader(leader.leader_epoch + 1)
                fetcher.add_partitions({TP: (follower, leader.leader_epoch)})
            else:
                await fetcher.run_round()
                clock.now += 2.0
            ours = follower.log.as_bytes()
            assert leader.log.as_bytes()[: len(ours)] == ours
            assert follower.high_watermark <= min(follower.log_end_offset, leader.high_watermark)
        await catch_up(fetcher, clock, follower, leader)

    asyncio.run(walk())
    assert follower.truncations == []
    assert follower.log.as_bytes() == leader.log.as_bytes()


terms = st.lists(
    st.tuples(st.sampled_from("AB"),  # who leads this epoch
              st.integers(0, 3),  # batches it writes
              st.integers(1, 3),  # records per batch
              st.one_of(st.none(), st.integers(0, 12))),  # how many of its batches the other then holds
    min_size=1, max_size=6)


def play(history) -> dict[str, list[bytes]]:
    logs: dict[str, list[bytes]] = {"A": [], "B": []}
    for epoch, (leader, batches, records, copied) in enumerate(history):
        log = MemoryLog(logs[leader])
        for _ in range(batches):
            log.append(make_batch(log.end, epoch, records, tag=f"{leader}{epoch}".encode()))
        other = "B" if leader == "A" else "A"
        if copied is not None:
            logs[other] = log.batches[:copied]
    return logs


def common_batches(a: list[bytes], b: list[bytes]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@settings(max_examples=300)
@given(history=terms, final=st.sampled_from("AB"), partial_tails=st.booleans(), data=st.data())
def test_a_divergent_follower_converges_on_the_leader_without_losing_committed_records(
        history, final, partial_tails, data):
    logs = play(history)
    follower_name = "B" if final == "A" else "A"
    shared = common_batches(logs[final], logs[follower_name])
    committed = MemoryLog(logs[follower_name][: data.draw(st.integers(0, shared), label="hw batches")]).end

    endpoint = MemoryLeader(partition_max_bytes=200, partial_tails=partial_tails)
    leader = LeaderReplica(log=MemoryLog(list(logs[final])))
    leader.epochs = leader.log.epochs_from_batches()
    leader.become_leader(len(history))
    endpoint.replicas[TP] = leader
    follower = MemoryFollower(logs[follower_name], high_watermark=committed)
    clock = Clock()

    async def follow():
        fetcher = ReplicaFetcher(endpoint, clock=clock)
        fetcher.add_partitions({TP: (follower, leader.leader_epoch)})
        await catch_up(fetcher, clock, follower, leader)

    asyncio.run(follow())
    assert all(offset >= committed for offset in follower.truncations)
    assert follower.log.as_bytes() == leader.log.as_bytes()
