"""broker/coordinator/runtime.py: operations of one partition in order, partitions independent,
those queued together written as one batch, a load replays the log, an unload answers
NOT_COORDINATOR and cancels the partition's timers, a failed write fails its operations and puts
the shard back as the log holds it (or keeps records the log appended), timers fire when the
(manual) clock moves.

Real parts below the runtime: a TopicRegistry on a real engine in a temp dir, real
replica.Partitions made leader / follower as the replica manager does, the real write path;
a follower's progress is reported as its fetches report it (follower_fetched). The shard is a
small tally (a count per name) written for these tests: what is tested is the runtime.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Iterator, Sequence, cast

import pytest

from wire.batch_builder import build_batch
from wire.error_codes import ErrorCode
from wire.record_batch import parse_header

from broker.coordinator.clock import ManualClock
from broker.cluster.single_broker_view import SingleBrokerView
from broker.coordinator.internal_topic_log import InternalTopicLog, TopicServices, TopicShape, batches
from broker.coordinator.runtime import CoordinatorError, CoordinatorRuntime, Outcome, ShardContext, TxnWrite
from broker.settings.config_from_settings import config_with
from broker.storage.modes import MODES, StorageModes
from broker.topic_admin import TopicAdministrator
from broker.topics import TopicRegistry
from replica.group_commit import GroupCommits
from replica.partition import Partition
from replica.partition_state import PartitionState
from replica.write_path import RecordsWrite, WritePath

ME, OTHER = 1, 2
TOPIC = "__tally"
Record = tuple[str, int | None]  # a name's count; None: the name is gone


class TallyLog(InternalTopicLog):
    def __init__(self, services: TopicServices) -> None:
        super().__init__(services, TOPIC, lambda: TopicShape(2, 1, None, 1 << 20))

    async def append_records(self, partition: Partition, records: Sequence[Record]) -> ErrorCode:
        return await self.write(partition, [(name.encode(), None if n is None else str(n).encode())
                                            for name, n in records], "tally")

    async def append_transactional(self, partition: Partition, records: Sequence[Record], txn: TxnWrite) -> ErrorCode:
        """The producer's transactional batch, at sequence 0 as a coordinator writes it."""
        batch = build_batch([(name.encode(), None if n is None else str(n).encode()) for name, n in records], 0,
                            (txn.producer_id, txn.producer_epoch, 0), transactional=True)
        write = RecordsWrite(partition, batch, parse_header(batch), from_client=False, coordinator=True,
                             verified=txn.verified)
        (result,) = await self._services.write_path.append_records([write], acks=-1, timeout_s=5)
        return result.error

    def replay_partition(self, partition: Partition) -> Iterator[Record]:
        return self.records(partition, lambda k, v: (k.decode(), None if v is None else int(v)), ValueError)


class Tally:
    """ops: ("add", name, n) -> the new count; ("get", name) -> the count; ("drop", name);
    ("refuse",) -> INVALID_REQUEST; ("later", name, delay_ms): ("add", name, 1) after the delay."""

    def __init__(self, context: ShardContext) -> None:
        self.counts: dict[str, int] = {}
        self.timer = context.timer
        self.undo = context.undo
        self.events: list[str] = []
        self.replayed: list[Record] = []

    def replay(self, record: Record) -> None:
        self.replayed.append(record)
        name, n = record
        self.undo.save(name, lambda: self._saving(name))
        if n is None:
            self.counts.pop(name, None)
        else:
            self.counts[name] = n

    def _saving(self, name: str):
        before = self.counts.get(name)
        self.events.append(f"saved {name}")

        def restore() -> None:
            if before is None:
                self.counts.pop(name, None)
            else:
                self.counts[name] = before
        return restore

    def handle(self, op) -> Outcome:
        match op:
            case ("add", name, n):
                new = self.counts.get(name, 0) + n
                return Outcome([(name, new)], new)
            case ("get", name):
                return Outcome([], self.counts.get(name))
            case ("drop", name):
                return Outcome([(name, None)], None)
            case ("later", name, delay_ms):
                self.timer.schedule(name, delay_ms, ("add", name, 1))
                return Outcome([], None)
        raise CoordinatorError(ErrorCode.invalid_request, f"no such op {op!r}")

    def loaded(self) -> None:
        self.events.append("loaded")

    def unloaded(self) -> None:
        self.events.append("unloaded")


class _Member:
    """A cluster member's storage, topics and write path, hosting TOPIC's two partitions."""

    def __init__(self, data_dir, mode: str, configs: dict[str, str] | None = None) -> None:
        self.config = config_with(data_dir=str(data_dir), storage_mode=mode, node_id=ME, etcd="http://unused:2379")
        self.storage = StorageModes(data_dir, mode)
        self.topics = TopicRegistry(self.config, self.storage)
        self.topics.load()
        self.write_path = WritePath(GroupCommits(self.storage.commit_writes))
        asyncio.run(self.topics.host(TOPIC, uuid.uuid4(), configs or {}, [(ME, OTHER)] * 2))
        view = SingleBrokerView(ME, "localhost", lambda: 9092, self.topics, "tally-cluster")
        self.services = TopicServices(self.topics, view, TopicAdministrator(self.config, view, self.topics),
                                      self.write_path)

    def partition(self, index: int) -> Partition:
        return cast(Partition, self.topics.partition(TOPIC, index))


def _lead(partition: Partition, epoch: int, isr=(ME,)) -> None:
    partition.make_leader(PartitionState(ME, epoch, epoch, (ME, OTHER), tuple(isr)))


def _follow(partition: Partition, epoch: int) -> None:
    partition.make_follower(PartitionState(OTHER, epoch, epoch, (ME, OTHER), (ME, OTHER)))


@pytest.fixture(params=MODES)
def member(tmp_path, request):
    m = _Member(tmp_path, request.param)
    yield m
    m.storage.close()


def _runtime(member, clock=None) -> tuple[CoordinatorRuntime, dict[int, Tally]]:
    shards: dict[int, Tally] = {}

    def new_shard(context: ShardContext) -> Tally:
        shards[context.partition.index] = Tally(context)
        return shards[context.partition.index]
    tally = TallyLog(member.services)
    return CoordinatorRuntime(tally, new_shard, tally, clock or ManualClock(), tally), shards


def test_one_partition_in_order_and_partitions_independently(member):
    _lead(member.partition(0), 1, isr=(ME, OTHER))  # a write counts once OTHER fetched it
    _lead(member.partition(1), 1)

    async def scenario():
        runtime, _ = _runtime(member)
        first = asyncio.ensure_future(runtime.submit(0, ("add", "a", 5)))
        second = asyncio.ensure_future(runtime.submit(0, ("get", "a")))
        elsewhere = await asyncio.wait_for(runtime.submit(1, ("add", "b", 2)), 5)
        assert elsewhere == 2  # partition 1 answered while partition 0's write still waits
        assert not first.done() and not second.done()  # the read waits behind the write
        member.partition(0).follower_fetched(OTHER, member.partition(0).log_end_offset)
        assert await asyncio.wait_for(first, 5) == 5
        assert await asyncio.wait_for(second, 5) == 5  # it saw the write before it

    asyncio.run(scenario())


def test_a_load_replays_every_record_of_the_partition(member):
    _lead(member.partition(0), 1)

    async def scenario():
        writer, _ = _runtime(member)
        for op in [("add", "a", 1), ("add", "b", 2), ("add", "a", 3), ("drop", "b")]:
            await writer.submit(0, op)
        reader, shards = _runtime(member)
        reader.sync()
        assert set(shards) == {0}  # partition 1 is not led here
        assert shards[0].counts == {"a": 4}
        assert shards[0].events == ["loaded"]
        assert await reader.submit(0, ("get", "a")) == 4

    asyncio.run(scenario())


def test_an_unload_answers_not_coordinator_cancels_timers_and_drops_the_state(member):
    p = member.partition(0)
    _lead(p, 1, isr=(ME, OTHER))
    clock = ManualClock()

    async def scenario():
        runtime, shards = _runtime(member, clock)
        runtime.sync()
        await runtime.submit(0, ("later", "t", 1_000))
        writing = asyncio.ensure_future(runtime.submit(0, ("add", "a", 1)))
        queued = asyncio.ensure_future(runtime.submit(0, ("get", "a")))
        await asyncio.sleep(0)  # the worker starts the write, which waits for OTHER
        assert clock.pending == 1 and not writing.done()
        _follow(p, 2)
        runtime.sync()
        for answer in (writing, queued):
            with pytest.raises(CoordinatorError) as refused:
                await answer
            assert refused.value.code is ErrorCode.not_coordinator
        assert clock.pending == 0
        assert shards[0].events == ["loaded", "unloaded"]
        with pytest.raises(CoordinatorError) as later:
            await runtime.submit(0, ("get", "a"))
        assert later.value.code is ErrorCode.not_coordinator
        _lead(p, 3)  # led again: the log, not the dropped shard, is what it starts from
        assert await runtime.submit(0, ("get", "t")) is None

    asyncio.run(scenario())


def test_operations_queued_together_are_written_as_one_batch(member):
    _lead(member.partition(0), 1)

    async def scenario():
        runtime, _ = _runtime(member)
        runtime.sync()
        answers = await asyncio.gather(*(runtime.submit(0, op) for op in
                                         [("add", "a", 1), ("add", "a", 2), ("get", "a"), ("add", "b", 5)]))
        assert answers == [1, 3, 3, 5]  # each saw the records of those before it
        assert len(list(batches(member.partition(0)))) == 1
        assert member.partition(0).log_end_offset == 3

    asyncio.run(scenario())


async def _fetched_once_appended(p: Partition) -> None:
    """OTHER fetches the partition's next write: the HW passes it."""
    end = p.log_end_offset
    while p.log_end_offset == end:
        await asyncio.sleep(0)
    p.follower_fetched(OTHER, p.log_end_offset)


def test_a_failed_write_fails_its_operations_and_puts_back_only_what_they_changed(tmp_path):
    member = _Member(tmp_path, "segment", {"min.insync.replicas": "2"})
    p = member.partition(0)
    _lead(p, 1, isr=(ME, OTHER))

    async def scenario():
        runtime, shards = _runtime(member)
        runtime.sync()
        first = shards[0]
        written = asyncio.ensure_future(runtime.submit(0, ("add", "a", 5)))
        await _fetched_once_appended(p)
        assert await written == 5
        assert first.events == ["loaded", "saved a"]
        _lead(p, 2)  # the follower drops out: an ISR of one, below min.insync.replicas
        added, dropped, read = await asyncio.gather(
            runtime.submit(0, ("add", "a", 1)), runtime.submit(0, ("drop", "b")), runtime.submit(0, ("get", "a")),
            return_exceptions=True)
        for failed in (added, dropped, read):  # the read saw a record that was not written: it fails too
            assert isinstance(failed, CoordinatorError)
            assert failed.code is ErrorCode.coordinator_not_available  # NOT_ENOUGH_REPLICAS, as Kafka maps it
        assert shards[0] is first and first.events == ["loaded", "saved a", "saved a", "saved b"]  # not reloaded
        assert first.counts == {"a": 5}  # as the log holds it: the written add stays, the failed one is undone
        _lead(p, 3, isr=(ME, OTHER))
        again = asyncio.ensure_future(runtime.submit(0, ("add", "a", 1)))
        await _fetched_once_appended(p)
        assert await again == 6
        with pytest.raises(CoordinatorError) as refused:
            await runtime.submit(0, ("nonsense",))
        assert refused.value.code is ErrorCode.invalid_request

    try:
        asyncio.run(scenario())
    finally:
        member.storage.close()


def test_records_appended_but_not_replicated_in_time_stay_in_the_shard(tmp_path, monkeypatch):
    member = _Member(tmp_path, "commitlog")
    p = member.partition(0)
    _lead(p, 1, isr=(ME, OTHER))  # the follower never fetches: the write times out after its append
    monkeypatch.setattr("broker.coordinator.internal_topic_log.WRITE_TIMEOUT_S", 0.05)

    async def scenario():
        runtime, shards = _runtime(member)
        runtime.sync()
        with pytest.raises(CoordinatorError) as failed:
            await runtime.submit(0, ("add", "a", 3))
        assert failed.value.code is ErrorCode.coordinator_not_available  # REQUEST_TIMED_OUT, as Kafka maps it
        assert shards[0].counts == {"a": 3}  # the leader's log has it: the state is the log's
        fresh, fresh_shards = _runtime(member)
        fresh.sync()
        assert fresh_shards[0].counts == {"a": 3}

    try:
        asyncio.run(scenario())
    finally:
        member.storage.close()


def test_a_transactional_write_is_a_batch_of_its_own_in_the_queue_order(member):
    p = member.partition(0)
    _lead(p, 1)

    async def scenario():
        runtime, shards = _runtime(member)
        runtime.sync()
        answers = await asyncio.gather(
            runtime.submit(0, ("add", "a", 1)),
            runtime.submit_transactional(0, ("add", "t", 5), TxnWrite(7, 2)),
            runtime.submit(0, ("add", "a", 2)),
            runtime.submit_transactional(0, ("add", "t", 1), TxnWrite(7, 1)),  # an older epoch: fenced
            runtime.submit(0, ("get", "t")),
            runtime.submit(0, ("add", "b", 3)),
            return_exceptions=True)
        assert answers[:3] == [1, 5, 3]  # each in its turn, seeing those before it
        fenced = answers[3]
        assert isinstance(fenced, CoordinatorError) and fenced.code is ErrorCode.invalid_producer_epoch
        assert answers[4:] == [5, 3]  # the fenced write failed nothing else; the shard is its log's
        headers = [header for _, header, _ in batches(p)]
        # a, the producer's own batch, a again (ended by the fenced write, which is refused), b
        assert [(h.producer_id, h.is_transactional, h.last_offset - h.base_offset + 1) for h in headers] == \
            [(-1, False, 1), (7, True, 1), (-1, False, 1), (-1, False, 1)]
        assert shards[0].counts == {"a": 3, "t": 5, "b": 3}

    asyncio.run(scenario())


def test_timers_fire_when_the_clock_advances(member):
    _lead(member.partition(0), 1)
    clock = ManualClock()

    async def scenario():
        runtime, shards = _runtime(member, clock)
        await runtime.submit(0, ("later", "t", 1_000))
        await runtime.submit(0, ("later", "t", 2_000))  # the same key again: one timer, the later one
        clock.advance(1_999)
        assert await runtime.submit(0, ("get", "t")) is None
        clock.advance(1)
        # the timer's operation went into the queue first: this read runs after it
        assert await runtime.submit(0, ("get", "t")) == 1
        assert clock.pending == 0 and len(shards[0].timer) == 0
        fresh, _ = _runtime(member)
        assert await fresh.submit(0, ("get", "t")) == 1  # the timer's record was written

    asyncio.run(scenario())
