"""The transaction coordinator as a shard of the coordinator runtime: every change is a record of
`__transaction_state` written through the write path and replayed, timers run on the runtime's
clock (a ManualClock here: no test waits for time to pass), a failed write answers the
coordinator's error and puts back what it changed as the log holds it, an unloaded partition
answers NOT_COORDINATOR.

Real parts: a TopicRegistry on a real engine in a temp dir holding `__transaction_state` and a
user topic, real replica.Partitions made leader as the replica manager does, the real write
path, the real marker appender and producer-id allocator. A follower's progress is reported as
its fetches report it (follower_fetched).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Callable, cast

import pytest

from wire.error_codes import ErrorCode

from broker.cluster.single_broker_view import SingleBrokerView
from broker.coordinator.clock import ManualClock
from broker.coordinator.internal_topic_log import TopicServices
from broker.producer_ids import ProducerIdAllocator
from broker.settings.config_from_settings import config_with
from broker.storage.modes import MODES, StorageModes
from broker.topic_admin import TopicAdministrator
from broker.topics import TopicRegistry
from broker.txn import txn_log
from broker.txn.coordinator import TransactionCoordinator
from broker.txn.ending import COMPLETE_RETRY_MS
from broker.txn.marker_append import MarkerAppender
from broker.txn.markers import RETRY_BACKOFF_MS, MarkerWriter
from broker.txn.state import TxnState
from broker.txn.state_store import TxnStateStore
from broker.txn.txn_shard import TxnShardConfig
from replica.group_commit import GroupCommits
from replica.partition import Partition
from replica.partition_state import PartitionState
from replica.write_path import WritePath

ME, OTHER = 1, 2
USER = "orders"
TID = "tx-1"
ABORT_INTERVAL_MS, EXPIRE_INTERVAL_MS, ID_EXPIRATION_MS = 1_000, 5_000, 60_000
E, O, PC, PA, CC, CA = (TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                        TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


class _Member:
    """A cluster member's storage, topics and write path, hosting the transaction state and a user topic."""

    def __init__(self, data_dir, mode: str, state_configs: dict[str, str], user_configs: dict[str, str]) -> None:
        self.config = config_with(data_dir=str(data_dir), storage_mode=mode, node_id=ME, etcd="http://unused:2379")
        self.storage = StorageModes(data_dir, mode)
        self.topics = TopicRegistry(self.config, self.storage)
        self.topics.load()
        self.write_path = WritePath(GroupCommits(self.storage.commit_writes))
        self.producer_ids = ProducerIdAllocator(data_dir)
        asyncio.run(self.topics.host(txn_log.TOPIC, uuid.uuid4(), state_configs, [(ME, OTHER)]))
        asyncio.run(self.topics.host(USER, uuid.uuid4(), user_configs, [(ME, OTHER)]))
        self.view = SingleBrokerView(ME, "localhost", lambda: 9092, self.topics, "txn-cluster")
        self.services = TopicServices(self.topics, self.view, TopicAdministrator(self.config, self.view, self.topics),
                                      self.write_path)

    def partition(self, topic: str) -> Partition:
        return cast(Partition, self.topics.partition(topic, 0))

    def coordinator(self, clock: ManualClock, transaction_version: int = 0) -> TransactionCoordinator:
        store = TxnStateStore(self.services, self.config)
        markers = MarkerWriter(self.topics, self.view, ME, MarkerAppender(self.topics, self.write_path, {}),
                               None, clock)
        config = TxnShardConfig(ID_EXPIRATION_MS, ABORT_INTERVAL_MS, EXPIRE_INTERVAL_MS, lambda: transaction_version)
        return TransactionCoordinator(store, self.producer_ids, markers, 900_000, config, cluster=True, clock=clock)

    def stored(self) -> list[TxnState | None]:
        """The states of TID's records in the log, in order (None: a tombstone)."""
        return [None if r.record is None else r.record.state
                for r in TxnStateStore(self.services, self.config).replay_partition(self.partition(txn_log.TOPIC))
                if r.transactional_id == TID]


def _lead(partition: Partition, epoch: int, isr=(ME,)) -> None:
    partition.make_leader(PartitionState(ME, epoch, epoch, (ME, OTHER), tuple(isr)))


def _follow(partition: Partition, epoch: int) -> None:
    partition.make_follower(PartitionState(OTHER, epoch, epoch, (ME, OTHER), (ME, OTHER)))


@pytest.fixture(params=MODES)
def member(tmp_path, request):
    m = _Member(tmp_path, request.param, {}, {})
    _lead(m.partition(txn_log.TOPIC), 1)
    _lead(m.partition(USER), 1)
    yield m
    m.storage.close()


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait for `condition`, which the coordinator's writes (fsynced in worker threads) make true."""
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


def _state(coordinator: TransactionCoordinator) -> TxnState | None:
    shard = coordinator.shard(0)
    meta = shard.transactions.get(TID) if shard is not None else None
    return meta.state if meta is not None else None


async def _open(coordinator: TransactionCoordinator, timeout_ms: int = 10_000) -> tuple[int, int]:
    """TID's producer, with USER-0 in its open transaction."""
    init = await coordinator.init_producer_id(TID, timeout_ms, -1, -1)
    assert init.error is ErrorCode.none
    assert await coordinator.add_partitions(TID, init.producer_id, init.producer_epoch, {(USER, 0)}, 0) is (
        ErrorCode.none)
    return init.producer_id, init.producer_epoch


@pytest.mark.parametrize("transaction_version, fenced_by", [(0, 1), (2, 2)])
def test_a_transaction_past_its_timeout_is_aborted_when_the_clock_passes_it(member, transaction_version, fenced_by):
    clock = ManualClock(1_000_000)

    async def scenario():
        coordinator = member.coordinator(clock, transaction_version)
        coordinator.start()
        producer_id, epoch = await _open(coordinator, timeout_ms=2_500)
        clock.advance(2 * ABORT_INTERVAL_MS)  # looks before its timeout
        # queued behind the timers' operations: the transaction is still open
        assert await coordinator.add_partitions(TID, producer_id, epoch, {(USER, 0)}, 0) is ErrorCode.none
        assert _state(coordinator) is O
        user_end = member.partition(USER).log_end_offset
        clock.advance(ABORT_INTERVAL_MS)  # the third look is 3 000 ms after it began
        await until(lambda: _state(coordinator) is CA, "the abort's Complete record")
        assert member.stored() == [E, O, PA, CA]  # every change is a record; the fence is in PrepareAbort's epoch
        meta = coordinator.shard(0).transactions[TID]
        assert (meta.producer_id, meta.producer_epoch) == (producer_id, epoch + fenced_by)
        assert member.partition(USER).log_end_offset == user_end + 1  # the ABORT marker
        assert await coordinator.add_partitions(TID, producer_id, epoch, {(USER, 0)}, 0) is ErrorCode.producer_fenced
        await coordinator.close()
        again = member.coordinator(clock, transaction_version)  # what the log says, replayed
        again.start()
        assert _state(again) is CA and again.shard(0).transactions[TID].producer_epoch == epoch + fenced_by

    asyncio.run(scenario())


def test_an_idle_id_expires_with_a_tombstone_when_the_clock_passes_its_expiration(member):
    clock = ManualClock(1_000_000)

    async def scenario():
        coordinator = member.coordinator(clock)
        coordinator.start()
        producer = await coordinator.init_producer_id(TID, 10_000, -1, -1)
        assert producer.error is ErrorCode.none
        clock.advance(ID_EXPIRATION_MS - 1)
        # queued behind the timers' operations (an abort of nothing, refused): the id is still there
        ended = await coordinator.end_txn(TID, producer.producer_id, producer.producer_epoch, False, False)
        assert ended.error is ErrorCode.invalid_txn_state and _state(coordinator) is E
        clock.advance(EXPIRE_INTERVAL_MS)
        await until(lambda: _state(coordinator) is None, "the id forgotten")
        assert member.stored() == [E, None]
        assert coordinator.describe(TID)[0] is ErrorCode.transactional_id_not_found

    asyncio.run(scenario())


def test_an_end_v4_sent_before_its_transaction_began_ends_nothing(member):
    """A late copy of an earlier transaction's EndTxn v0-v4, on a connection older than the one
    that began the open transaction (txn_shard.py), is refused with nothing written; the
    transaction's own EndTxn, on that connection or a newer one, ends it."""
    clock = ManualClock(1_000_000)

    async def scenario():
        coordinator = member.coordinator(clock)
        coordinator.start()
        producer = await coordinator.init_producer_id(TID, 10_000, -1, -1)
        producer_id, epoch = producer.producer_id, producer.producer_epoch
        assert await coordinator.add_partitions(TID, producer_id, epoch, {(USER, 0)}, 0, connection=7) is (
            ErrorCode.none)
        late = await coordinator.end_txn(TID, producer_id, epoch, True, False, connection=6)
        assert late.error is ErrorCode.producer_fenced and _state(coordinator) is O and member.stored() == [E, O]
        assert (await coordinator.end_txn(TID, producer_id, epoch, True, False, connection=8)).error is (
            ErrorCode.none)
        await until(lambda: _state(coordinator) is CC, "the Complete record")
        await coordinator.close()

    asyncio.run(scenario())


def test_markers_are_retried_on_the_clock_and_a_new_coordinator_resumes_a_prepared_end(tmp_path):
    member = _Member(tmp_path, "segment", {}, {"min.insync.replicas": "2"})
    _lead(member.partition(txn_log.TOPIC), 1)
    user = member.partition(USER)
    _lead(user, 1)  # an ISR of one, below min.insync.replicas: a marker there is refused
    clock = ManualClock(1_000_000)

    async def scenario():
        first = member.coordinator(clock)
        first.start()
        producer_id, epoch = await _open(first)
        assert (await first.end_txn(TID, producer_id, epoch, True, False)).error is ErrorCode.none
        await until(lambda: clock.pending > 2, "the marker's retry waiting on the clock")  # besides the two looks
        assert _state(first) is PC and user.log_end_offset == 0
        clock.advance(RETRY_BACKOFF_MS[0])  # tried again: refused again, waits twice as long
        await until(lambda: clock.pending > 2, "the second retry")
        assert _state(first) is PC
        await first.close()  # its end is cancelled with the marker unwritten

        _lead(user, 1, isr=(ME, OTHER))
        second = member.coordinator(clock)
        second.start()  # replays PrepareCommit; resumes it once its timer fires
        assert _state(second) is PC
        clock.advance(0)
        await until(lambda: user.log_end_offset == 1, "the COMMIT marker")
        user.follower_fetched(OTHER, user.log_end_offset)  # replicated: the marker counts
        await until(lambda: _state(second) is CC, "the Complete record")
        assert member.stored() == [E, O, PC, CC]
        await second.close()

    try:
        asyncio.run(scenario())
    finally:
        member.storage.close()


def test_a_failed_write_answers_the_coordinator_error_and_puts_the_id_back_as_the_log_holds_it(tmp_path):
    member = _Member(tmp_path, "segment", {"min.insync.replicas": "2"}, {})
    state = member.partition(txn_log.TOPIC)
    _lead(state, 1, isr=(ME, OTHER))
    _lead(member.partition(USER), 1)
    clock = ManualClock(1_000_000)

    async def scenario():
        coordinator = member.coordinator(clock)
        coordinator.start()
        init = asyncio.ensure_future(coordinator.init_producer_id(TID, 10_000, -1, -1))
        await until(lambda: state.log_end_offset == 1, "the InitProducerId record appended")
        state.follower_fetched(OTHER, 1)
        producer = await init
        assert producer.error is ErrorCode.none
        loaded = coordinator.shard(0)
        _lead(state, 1, isr=(ME,))  # the ISR shrinks below min.insync.replicas
        refused = await coordinator.add_partitions(TID, producer.producer_id, producer.producer_epoch, {(USER, 0)}, 0)
        assert refused is ErrorCode.coordinator_not_available  # NOT_ENOUGH_REPLICAS, as Kafka answers it
        assert coordinator.shard(0) is loaded and _state(coordinator) is E  # the log's state, not the refused record's
        assert coordinator.verify_partitions(TID, producer.producer_id, producer.producer_epoch, {(USER, 0)}) == {
            (USER, 0): ErrorCode.transaction_abortable}
        _lead(state, 1, isr=(ME, OTHER))
        added = asyncio.ensure_future(coordinator.add_partitions(TID, producer.producer_id, producer.producer_epoch,
                                                                 {(USER, 0)}, 0))
        await until(lambda: state.log_end_offset == 2, "the AddPartitions record appended")
        state.follower_fetched(OTHER, 2)
        assert await added is ErrorCode.none and _state(coordinator) is O
        await coordinator.close()

    try:
        asyncio.run(scenario())
    finally:
        member.storage.close()


def test_a_complete_record_the_log_refuses_is_tried_again_after_the_backoff(tmp_path):
    member = _Member(tmp_path, "commitlog", {"min.insync.replicas": "2"}, {})
    state, user = member.partition(txn_log.TOPIC), member.partition(USER)
    _lead(state, 1, isr=(ME, OTHER))
    _lead(user, 1)
    clock = ManualClock(1_000_000)

    async def replicated(call, records: int):
        """`call`'s answer once OTHER fetched its `records` records of the transaction state."""
        answer = asyncio.ensure_future(call)
        end = state.log_end_offset + records
        await until(lambda: state.log_end_offset == end, "the records appended")
        state.follower_fetched(OTHER, end)
        return await answer

    async def scenario():
        coordinator = member.coordinator(clock)
        coordinator.start()
        init = await replicated(coordinator.init_producer_id(TID, 10_000, -1, -1), 1)
        producer_id, epoch = init.producer_id, init.producer_epoch
        assert await replicated(coordinator.add_partitions(TID, producer_id, epoch, {(USER, 0)}, 0), 1) is (
            ErrorCode.none)
        loaded = coordinator.shard(0)
        ended = asyncio.ensure_future(coordinator.end_txn(TID, producer_id, epoch, True, False))
        await until(lambda: state.log_end_offset == 3, "the PrepareCommit record appended")
        prepared = coordinator.shard(0).transactions[TID]
        state_end = state.log_end_offset
        state.follower_fetched(OTHER, state_end)
        assert (await ended).error is ErrorCode.none
        _lead(state, 2)  # the follower drops out before the Complete record: NOT_ENOUGH_REPLICAS
        await until(lambda: user.log_end_offset == 1, "the COMMIT marker")
        await until(lambda: coordinator.shard(0).transactions[TID] is not prepared, "the refused Complete put back")
        assert coordinator.shard(0) is loaded and _state(coordinator) is PC and member.stored() == [E, O, PC]
        _lead(state, 3, isr=(ME, OTHER))
        clock.advance(COMPLETE_RETRY_MS - 1)
        assert _state(coordinator) is PC and user.log_end_offset == 1  # not before the backoff
        clock.advance(1)  # the end resumes: the marker again (idempotent), then the Complete record
        await until(lambda: state.log_end_offset == state_end + 1, "the Complete record appended")
        state.follower_fetched(OTHER, state.log_end_offset)
        await until(lambda: _state(coordinator) is CC, "the Complete record")
        assert member.stored() == [E, O, PC, CC]
        await coordinator.close()

    try:
        asyncio.run(scenario())
    finally:
        member.storage.close()


def test_an_unloaded_partition_answers_not_coordinator_and_its_timers_stop(tmp_path):
    member = _Member(tmp_path, "segment", {}, {})
    state = member.partition(txn_log.TOPIC)
    _lead(state, 1, isr=(ME, OTHER))
    clock = ManualClock(1_000_000)

    async def scenario():
        coordinator = member.coordinator(clock)
        coordinator.start()
        assert clock.pending == 2  # the shard's looks for timed-out transactions and expired ids
        writing = asyncio.ensure_future(coordinator.init_producer_id(TID, 10_000, -1, -1))
        await until(lambda: state.log_end_offset == 1, "the InitProducerId record appended")
        _follow(state, 2)
        coordinator.start()  # the metadata says another broker leads it now
        assert (await writing).error is ErrorCode.not_coordinator  # its record may not survive
        assert clock.pending == 0 and coordinator.shard(0) is None
        assert (await coordinator.init_producer_id(TID, 10_000, -1, -1)).error is ErrorCode.not_coordinator
        assert coordinator.describe(TID) == (ErrorCode.not_coordinator, None)
        assert coordinator.listed(None, set(), -1) == []
        await coordinator.close()

    try:
        asyncio.run(scenario())
    finally:
        member.storage.close()
