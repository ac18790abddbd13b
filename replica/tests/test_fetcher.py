"""The replica fetcher against an in-memory leader: truncation, fetching, errors, one case each."""

from __future__ import annotations

import asyncio

import pytest

from replica.fetcher import ReplicaFetcher
from replica.leader_endpoint import TopicPartition
from replica.tests.memory_replicas import TP, LeaderReplica, MemoryFollower, MemoryLeader, MemoryLog, make_batch
from wire.error_codes import ErrorCode

OTHER = TopicPartition("t", 1)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def chain(epochs: list[int], tag: bytes, start: int = 0, records: int = 2) -> list[bytes]:
    """Consecutive batches of `records` records each, one per entry of `epochs`."""
    out = []
    for i, epoch in enumerate(epochs):
        out.append(make_batch(start + i * records, epoch, records, tag))
    return out


def leader_with(batches: list[bytes], epoch: int, **kw) -> tuple[MemoryLeader, LeaderReplica]:
    leader = MemoryLeader(**kw)
    replica = LeaderReplica(log=MemoryLog(list(batches)))
    replica.epochs = replica.log.epochs_from_batches()
    replica.become_leader(epoch)
    leader.replicas[TP] = replica
    return leader, replica


def run(coro):
    return asyncio.run(coro)


async def rounds(fetcher: ReplicaFetcher, clock: Clock, n: int = 10) -> None:
    for _ in range(n):
        await fetcher.run_round()
        clock.now += 2.0  # past any backoff


def fetch_rounds(leader: MemoryLeader, follower: MemoryFollower, leader_epoch: int, n: int) -> None:
    """A fetcher of TP alone, following `leader` at `leader_epoch`, runs `n` rounds."""
    async def go():
        clock = Clock()
        fetcher = ReplicaFetcher(leader, clock=clock)
        fetcher.add_partitions({TP: (follower, leader_epoch)})
        await rounds(fetcher, clock, n)

    run(go())


def test_empty_follower_copies_the_leader_and_takes_its_high_watermark():
    leader, replica = leader_with(chain([0, 0, 1], b"L"), epoch=1)
    replica.high_watermark = 2
    follower = MemoryFollower()

    async def go():
        fetcher = ReplicaFetcher(leader, clock=Clock())
        fetcher.add_partitions({TP: (follower, 1)})
        assert await fetcher.run_round()
        return fetcher

    run(go())
    assert follower.log.as_bytes() == replica.log.as_bytes()
    # No epoch of our own, so nothing to ask: Kafka truncates such a log to its HW (0) instead.
    assert [name for name, _ in leader.requests] == ["fetch"]
    # The leader's HW was 2 when it answered; ours is capped by it, not by our LEO of 6.
    assert follower.high_watermark == 2


def test_a_tail_in_an_epoch_the_leader_never_had_is_cut_at_the_leaders_end_of_the_epoch_before():
    common = chain([0, 0, 0], b"C")
    follower = MemoryFollower(common + chain([1, 1], b"F", start=6), high_watermark=6)
    leader, replica = leader_with(common + chain([2, 2], b"L", start=6), epoch=2)

    fetch_rounds(leader, follower, 2, 3)
    assert follower.truncations == [6]
    assert follower.log.as_bytes() == replica.log.as_bytes()
    (name, queries), *_ = leader.requests
    assert name == "offset_for_leader_epoch" and queries[0].leader_epoch == 1 and queries[0].current_leader_epoch == 2


def test_same_epoch_answer_cuts_to_the_leaders_end_of_that_epoch():
    # We led epoch 1 and wrote 4 batches; the new leader had fetched 2 of them.
    ours = chain([1, 1, 1, 1], b"A")
    follower = MemoryFollower(ours, high_watermark=2)
    leader, replica = leader_with(ours[:2], epoch=2)
    replica.append(3)

    fetch_rounds(leader, follower, 2, 2)
    assert follower.truncations == [4]
    assert follower.log.as_bytes() == replica.log.as_bytes()


def test_the_leader_holding_more_of_our_last_common_epoch_does_not_save_our_later_epoch():
    # Epoch 1's leader wrote 0-7; we had fetched 0-3 when we led epoch 3 (writing 4-7); the
    # leader of epoch 4 has all of epoch 1. Its epoch 1 ends at 8, ours at 4: cut to 4.
    epoch1 = chain([1, 1, 1, 1], b"C")
    follower = MemoryFollower(epoch1[:2] + chain([3, 3], b"F", start=4), high_watermark=4)
    leader, replica = leader_with(epoch1, epoch=4)

    fetch_rounds(leader, follower, 4, 2)
    assert follower.truncations == [4]
    assert follower.log.as_bytes() == replica.log.as_bytes()


def test_an_epoch_unknown_to_us_takes_a_second_question_kip_279():
    # Epoch 1 is shared up to offset 4. We wrote 4-5 in epoch 1 that nobody fetched, then the
    # leader led epoch 2 (4-7) without us, then we led epoch 3 (6-9) without it.
    common = chain([1, 1], b"C")
    follower = MemoryFollower(common + chain([1], b"F", start=4) + chain([3, 3], b"F", start=6), high_watermark=4)
    leader, replica = leader_with(common + chain([2, 2], b"L", start=4), epoch=4)

    fetch_rounds(leader, follower, 4, 4)
    # Asked for 3: the leader says its epoch 2 ends at 8; our largest epoch <= 2 is 1, ending
    # where our epoch 3 starts (6): cut there and ask for 1: the leader's epoch 1 ends at 4.
    asked = [q[0].leader_epoch for name, q in leader.requests if name == "offset_for_leader_epoch"]
    assert asked == [3, 1]
    assert follower.truncations == [6, 4]
    assert follower.log.as_bytes() == replica.log.as_bytes()


def test_an_undefined_answer_cuts_to_the_high_watermark():
    # The leader's batches carry no epoch (its cache is empty): it answers UNDEFINED.
    theirs = chain([-1, -1, -1], b"L")
    follower = MemoryFollower(theirs[:1] + chain([0, 0], b"F", start=2), high_watermark=2)
    leader, replica = leader_with(theirs, epoch=0)
    replica.epochs = []

    fetch_rounds(leader, follower, 0, 2)
    assert follower.truncations == [2]
    assert follower.log.as_bytes() == replica.log.as_bytes()


def test_out_of_range_behind_the_leaders_log_start_starts_over_there():
    follower = MemoryFollower(chain([0, 0], b"L"), high_watermark=4)
    leader, replica = leader_with(chain([0, 0, 0], b"L", start=10), epoch=0)
    replica.log.start = 10

    fetch_rounds(leader, follower, 0, 3)
    assert follower.log_start_offset == 10
    assert follower.log.as_bytes() == replica.log.as_bytes()


def test_a_log_start_inside_a_batch_starts_our_log_at_that_batch():
    follower = MemoryFollower()
    leader, replica = leader_with(chain([0, 0, 0], b"L", records=4), epoch=0)  # batches at 0, 4, 8
    replica.log.batches = replica.log.batches[1:]
    replica.log.start = 6  # DeleteRecords up to 6: the batch 4-7 stays

    fetch_rounds(leader, follower, 0, 3)
    assert follower.log_start_offset == 4
    assert follower.log.as_bytes() == replica.log.as_bytes()


def test_out_of_range_past_the_leaders_end_truncates_through_the_epochs():
    leader, replica = leader_with(chain([0, 0, 0], b"L"), epoch=0)
    follower = MemoryFollower()

    async def go():
        clock = Clock()
        fetcher = ReplicaFetcher(leader, clock=clock)
        fetcher.add_partitions({TP: (follower, 0)})
        await rounds(fetcher, clock, 1)
        assert follower.log_end_offset == 6
        replica.log.truncate_to(2)  # the leader lost its tail (an unclean restart)
        replica.append(1)
        await rounds(fetcher, clock, 3)

    run(go())
    # The leader's epoch 0 now ends at 3, inside our batch 2-3: that whole batch goes.
    assert follower.truncations == [3]
    assert follower.log.as_bytes() == replica.log.as_bytes()


def test_out_of_range_that_the_epochs_cannot_explain_backs_off_instead_of_spinning():
    follower = MemoryFollower(chain([0], b"F"), high_watermark=2)
    leader, replica = leader_with([], epoch=0)
    replica.epochs = []  # answers UNDEFINED: we cut to our HW, 2, which is past its end, 0

    async def go():
        clock = Clock()
        fetcher = ReplicaFetcher(leader, clock=clock, backoff_ms=1000)
        fetcher.add_partitions({TP: (follower, 0)})
        for _ in range(6):
            await fetcher.run_round()  # the clock stands still
        # Cut to the HW, fetch: out of range; ask again, same answer: wait, do not fetch.
        assert [name for name, _ in leader.requests] == ["offset_for_leader_epoch", "fetch",
                                                          "offset_for_leader_epoch"]
        assert not await fetcher.run_round()
        clock.now += 1.0
        assert await fetcher.run_round()

    run(go())
    assert follower.log_end_offset == 2


def test_partial_batches_at_the_end_of_a_response_are_fetched_again_whole():
    batches = chain([0] * 6, b"L", records=3)
    leader, replica = leader_with(batches, epoch=0, partition_max_bytes=len(batches[0]) * 3 // 2,
                                  partial_tails=True, follower_in_isr=False)
    follower = MemoryFollower()

    replica.high_watermark = replica.log.end

    async def go():
        clock = Clock()
        fetcher = ReplicaFetcher(leader, clock=clock)
        fetcher.add_partitions({TP: (follower, 0)})
        await fetcher.run_round()
        # One whole batch came: the leader's HW (18) is capped at what we hold.
        assert follower.log_end_offset == 3 and follower.high_watermark == 3
        await rounds(fetcher, clock, 6)

    run(go())
    fetches = [name for name, _ in leader.requests if name == "fetch"]
    assert len(fetches) >= 6  # one batch per response
    assert follower.log.as_bytes() == replica.log.as_bytes()


def test_a_partition_the_leader_refuses_is_delayed_while_the_others_progress():
    leader, replica = leader_with(chain([0, 0], b"L"), epoch=0)
    refusing = LeaderReplica(error=ErrorCode.not_leader_or_follower)
    leader.replicas[OTHER] = refusing
    follower, other = MemoryFollower(), MemoryFollower()
    clock = Clock()

    async def go():
        fetcher = ReplicaFetcher(leader, clock=clock, backoff_ms=1000)
        fetcher.add_partitions({TP: (follower, 0), OTHER: (other, 0)})
        await fetcher.run_round()
        assert follower.log.as_bytes() == replica.log.as_bytes()
        replica.append(2)
        await fetcher.run_round()  # OTHER is delayed: not in this fetch
        assert [p.tp for p in leader.requests[-1][1]] == [TP]
        assert follower.log_end_offset == 6
        refusing.error = ErrorCode.none
        refusing.become_leader(0)
        refusing.append(1)
        clock.now += 1.0
        await fetcher.run_round()
        assert [p.tp for p in leader.requests[-1][1]] == [TP, OTHER]

    run(go())
    assert other.log.as_bytes() == refusing.log.as_bytes()


@pytest.mark.parametrize("error,current_epoch", [(ErrorCode.fenced_leader_epoch, 0), (ErrorCode.unknown_leader_epoch, 2)])
def test_a_fenced_or_unknown_epoch_keeps_the_partition_truncating_until_it_passes(error, current_epoch):
    follower = MemoryFollower(chain([0], b"L"))
    leader, replica = leader_with(chain([0, 0], b"L"), epoch=1)
    clock = Clock()

    async def go():
        fetcher = ReplicaFetcher(leader, clock=clock)
        fetcher.add_partitions({TP: (follower, current_epoch)})
        await fetcher.run_round()
        assert [name for name, _ in leader.requests] == ["offset_for_leader_epoch"]
        assert not await fetcher.run_round()  # delayed
        fetcher.add_partitions({TP: (follower, 1)})  # metadata caught up
        await fetcher.run_round()

    run(go())
    assert replica.fence(current_epoch) is error
    assert follower.log.as_bytes() == replica.log.as_bytes()


def test_a_lost_connection_delays_every_partition_of_the_request_and_then_recovers():
    leader, replica = leader_with(chain([0, 0], b"L"), epoch=0)
    follower = MemoryFollower()
    clock = Clock()

    async def go():
        fetcher = ReplicaFetcher(leader, clock=clock, backoff_ms=1000)
        fetcher.add_partitions({TP: (follower, 0)})
        leader.reachable = False
        assert await fetcher.run_round()
        assert not await fetcher.run_round()
        leader.reachable = True
        clock.now += 1.0
        await fetcher.run_round()

    run(go())
    assert follower.log.as_bytes() == replica.log.as_bytes()


class GatedLeader(MemoryLeader):
    """Holds each fetch answer until the test opens the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def fetch(self, partitions):
        answer = await super().fetch(partitions)
        await self.gate.wait()
        return answer


def test_an_answer_for_a_partition_removed_meanwhile_is_ignored():
    leader = GatedLeader()
    replica = LeaderReplica()
    replica.become_leader(0)
    replica.append(2)
    leader.replicas[TP] = replica
    follower = MemoryFollower()

    async def go():
        fetcher = ReplicaFetcher(leader, clock=Clock())
        fetcher.add_partitions({TP: (follower, 0)})
        in_flight = asyncio.create_task(fetcher.run_round())
        await asyncio.sleep(0)
        fetcher.remove_partitions([TP])
        leader.gate.set()
        await in_flight
        assert fetcher.partitions == frozenset()

    run(go())
    assert follower.log_end_offset == 0


def test_the_running_fetcher_follows_appends_and_retries_after_its_backoff():
    leader, replica = leader_with(chain([0], b"L"), epoch=0, empty_wait_s=0.01)
    follower = MemoryFollower()

    async def until(predicate) -> None:
        for _ in range(200):
            if predicate():
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the fetcher did not get there in 2 s")

    answers = []
    fetch = leader.fetch

    async def counted_fetch(partitions):
        answers.append(await fetch(partitions))
        return answers[-1]

    leader.fetch = counted_fetch

    async def go():
        fetcher = ReplicaFetcher(leader, backoff_ms=50)
        fetcher.start()
        fetcher.add_partitions({TP: (follower, 0)})
        await until(lambda: follower.log_end_offset == 2)
        replica.error = ErrorCode.not_leader_or_follower
        replica.append(1)
        erred = len(answers)
        await until(lambda: len(answers) >= erred + 2)  # two answers with the error, a backoff between
        assert follower.log_end_offset == 2
        replica.error = ErrorCode.none
        await until(lambda: follower.log_end_offset == 3)
        await fetcher.close()
        assert not leader.reachable  # close() closes the endpoint

    run(go())
    assert follower.log.as_bytes() == replica.log.as_bytes()


class RefusingFollower(MemoryFollower):
    """A log that refuses its next `refusals` appends, as a full or failing disk does."""

    def __init__(self, refusals: int) -> None:
        super().__init__()
        self.refusals = refusals

    def append_as_follower(self, batch: bytes) -> None:
        if self.refusals:
            self.refusals -= 1
            raise OSError(28, "No space left on device")
        super().append_as_follower(batch)


def test_a_log_that_refuses_an_append_delays_only_its_own_partition():
    leader, replica = leader_with(chain([0, 0], b"L"), epoch=0)
    other_replica = LeaderReplica()
    other_replica.become_leader(0)
    other_replica.append(2)
    leader.replicas[OTHER] = other_replica
    refusing, other = RefusingFollower(refusals=1), MemoryFollower()
    clock = Clock()

    async def go():
        fetcher = ReplicaFetcher(leader, clock=clock, backoff_ms=1000)
        fetcher.add_partitions({TP: (refusing, 0), OTHER: (other, 0)})
        await fetcher.run_round()
        assert refusing.log_end_offset == 0 and other.log_end_offset == 2
        other_replica.append(1)
        await fetcher.run_round()
        assert [p.tp for p in leader.requests[-1][1]] == [OTHER]
        clock.now += 1.0
        await fetcher.run_round()

    run(go())
    assert refusing.log.as_bytes() == replica.log.as_bytes()
    assert other.log.as_bytes() == other_replica.log.as_bytes()


class FlakyLeader(MemoryLeader):
    """Its first fetch fails with an error no endpoint should raise."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.failures = 1

    async def fetch(self, partitions):
        if self.failures:
            self.failures -= 1
            raise RuntimeError("a bug in the endpoint")
        return await super().fetch(partitions)


def test_the_running_fetcher_outlives_an_unexpected_error():
    leader = FlakyLeader(empty_wait_s=0.01)
    replica = LeaderReplica()
    replica.become_leader(0)
    replica.append(3)
    leader.replicas[TP] = replica
    follower = MemoryFollower()

    async def go():
        fetcher = ReplicaFetcher(leader, backoff_ms=20)
        fetcher.start()
        fetcher.add_partitions({TP: (follower, 0)})
        for _ in range(200):
            if follower.log_end_offset == 3:
                break
            await asyncio.sleep(0.01)
        await fetcher.close()

    run(go())
    assert leader.failures == 0
    assert follower.log.as_bytes() == replica.log.as_bytes()
