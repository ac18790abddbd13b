"""One runtime for the coordinators that keep their state in an internal topic (Kafka's
coordinator-common CoordinatorRuntime): what each coordinator writes about its own records is a
shard; leadership, ordering, writing and timers are written here once.

- A shard is the state of one partition of the topic (`Shard`): `replay(record)` applies a
  record, `handle(op)` answers an operation with the records it needs written and the answer to
  give once they are (`Outcome`). `handle` changes no state of its own that a record carries:
  the records it returns are replayed into it, the same way a load replays them, so what a
  shard holds is what its log says once they are written. A record its shard's coordinator
  applied itself (Kafka's classic group manager does: CoordinatorResult's replayRecords=false)
  is one the shard's `replay` passes over (group_loading.py).
- Loading: when this broker leads a partition it has not loaded, a fresh shard replays every
  record of that partition's log (log start to log end: the new leader's log is the truth) on
  the event loop without awaiting, so no operation sees it half loaded; then `loaded()` lets it
  resume its work. Unloading, when the broker no longer leads it (a follower, not hosted, the
  topic deleted or recreated): every queued or running operation answers NOT_COORDINATOR, the
  partition's timers are cancelled, `unloaded()` is told and the shard is dropped.
  `sync` (after every metadata image) does both for the whole topic; `submit` checks the one
  partition it is asked about first, which is what a single broker, whose topic appears on
  first use, relies on. Losing and regaining leadership in a later epoch without being a
  follower in between cannot change the log (an elected leader was in the ISR), so only the
  role and the log (the same Partition object) are compared, as Kafka's runtime does.
- Operations on one partition are handled one at a time, in the order submitted; each sees the
  records of those before it. Those queued together (up to MAX_BATCH_OPS) are handled, their
  records replayed and then written as one batch through the write path (the writer's
  `append_records`, Kafka's runtime batches alike), and answered once it is written; the next
  ones wait for that. Different partitions run independently.
- A write that fails answers each operation of its batch with the coordinator's error for it
  (internal_topic_log.coordinator_error), never with its answer. If its records were not
  appended, the shard is put back as the log holds it (undo.py: what the batch's replays
  changed, key by key, as Kafka reverts to the last written offset); if they were (appended,
  not replicated in time: `APPENDED`), they are the log's and stay, as in Kafka. A coordinator
  that applied its records itself undoes its change on the error answer (as Kafka's classic
  group manager does).
- A transactional write (`submit_transactional`, Kafka's scheduleTransactionalWriteOperation):
  an operation whose records are a producer's transactional batch (TxnOffsetCommit's offsets).
  It takes its turn in the partition's queue like any other, but its records are written as a
  batch of their own, never merged with other operations' records, through the writer's
  `append_transactional` with the producer's id and epoch (and the verification guard its
  transaction was asked under), so a fenced producer's refusal (INVALID_PRODUCER_EPOCH,
  PRODUCER_FENCED, INVALID_TXN_STATE: passed on as they are) answers that operation alone.
- Timers (shard_timer.py) submit an operation into their partition's queue when they fire,
  on the runtime's clock (clock.py), which a test replaces with a manual one.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Callable, Generic, NamedTuple, Protocol, TypeVar, cast

from wire.error_codes import ErrorCode

from replica.partition import Partition
from replica.txn_verification import VerificationGuard
from broker.coordinator.clock import Clock, SystemClock
from broker.coordinator.internal_topic_log import APPENDED, coordinator_error
from broker.coordinator.shard_timer import ShardTimer
from broker.coordinator.undo import UndoLog
from broker.topic import Topic

log = logging.getLogger(__name__)

# Operations handled before their records are written together (Kafka's runtime batches its
# writes alike): one append and one fsync for a burst of requests on one partition instead of
# one each, while a batch's records stay far below a message's size limit.
MAX_BATCH_OPS = 64

R = TypeVar("R")  # a record of the topic, decoded
O = TypeVar("O")  # an operation
A = TypeVar("A")  # an operation's answer
O_in = TypeVar("O_in", contravariant=True)
R_in = TypeVar("R_in", contravariant=True)
R_out = TypeVar("R_out", covariant=True)


class CoordinatorError(Exception):
    """An operation's failure, as the error code its coordinator answers a client."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(f"{code.name}: {message}" if message else code.name)
        self.code = code
        self.message = message


class Outcome(NamedTuple, Generic[R, A]):
    records: Sequence[R]  # to replay, then write, before `answer` is given
    answer: A


class Shard(Protocol[R, O_in, A]):
    def replay(self, record: R) -> None: ...

    def handle(self, op: O_in) -> Outcome[R, A]:
        """Raises CoordinatorError to answer the operation with an error."""
        ...

    def loaded(self) -> None:
        """Every record of the partition is replayed: resume what the records left in flight."""
        ...

    def unloaded(self) -> None:
        """The partition is no longer coordinated here: let go of what lives outside the shard."""
        ...


class ShardLog(Protocol[R_out]):
    """The internal topic, as the runtime reads it (an InternalTopicLog)."""

    @property
    def name(self) -> str: ...

    def topic(self) -> Topic | None: ...

    def replay_partition(self, partition: Partition) -> Iterable[R_out]: ...


class RecordWriter(Protocol[R_in]):
    """How the records operations return are written (through the write path). A runtime given
    none only loads and unloads: its coordinator still writes its records itself."""

    async def append_records(self, partition: Partition, records: Sequence[R_in]) -> ErrorCode: ...


class TxnWrite(NamedTuple):
    """The producer whose transactional batch a transactional write's records are."""

    producer_id: int
    producer_epoch: int
    verified: VerificationGuard | None = None  # the guard its transaction was asked to hold the partition under


class TransactionalWriter(Protocol[R_in]):
    """How a transactional write's records are written: one transactional batch of the producer."""

    async def append_transactional(self, partition: Partition, records: Sequence[R_in], txn: TxnWrite) -> ErrorCode: ...


class ShardContext(NamedTuple, Generic[O]):
    """What a new shard is given: its partition, the clock, its partition's timers, and the undo
    log its `replay` saves what it changes in (undo.py)."""

    partition: Partition
    clock: Clock
    timer: ShardTimer[O]
    undo: UndoLog


@dataclass(eq=False)
class _Loaded(Generic[R, O, A]):
    partition: Partition
    shard: Shard[R, O, A]
    timer: ShardTimer[O]
    undo: UndoLog
    queue: deque[tuple[O, asyncio.Future, TxnWrite | None]] = field(default_factory=deque)
    running: list[asyncio.Future] = field(default_factory=list)  # answers waiting for their records' write
    worker: asyncio.Task | None = None
    unloaded: bool = False


@dataclass(eq=False)
class _Batch(Generic[R]):
    """Operations handled together: their records, written as one batch, and their answers."""

    records: list[R] = field(default_factory=list)
    answers: list[tuple[asyncio.Future, object]] = field(default_factory=list)
    txn: TxnWrite | None = None  # the records are one transactional write's, written as the producer's batch


def _not_coordinator(topic: str, index: int) -> CoordinatorError:
    return CoordinatorError(ErrorCode.not_coordinator, f"{topic}-{index} is not coordinated here")


class CoordinatorRuntime(Generic[R, O, A]):
    def __init__(self, shard_log: ShardLog[R], new_shard: Callable[[ShardContext[O]], Shard[R, O, A]],
                 writer: RecordWriter[R] | None = None, clock: Clock | None = None,
                 txn_writer: TransactionalWriter[R] | None = None) -> None:
        self._log = shard_log
        self._writer = writer
        self._txn_writer = txn_writer
        self._new_shard = new_shard
        self.clock = clock or SystemClock()
        self._loaded: dict[int, _Loaded[R, O, A]] = {}

    # --- leadership -------------------------------------------------------------------------------

    def sync(self) -> None:
        """Load the partitions led here and not loaded; unload the loaded ones no longer led."""
        led = {i: p for i, p in enumerate(self._partitions()) if p is not None and p.is_leader}
        for index in sorted(self._loaded):
            if led.get(index) is not self._loaded[index].partition:
                self._unload(index)
        for index in sorted(set(led) - set(self._loaded)):
            self._load(index, led[index])

    async def on_metadata(self, image, change) -> None:
        """A ClusterMetadata listener (called after the cluster member applied the image)."""
        self.sync()

    def shard(self, index: int) -> Shard[R, O, A] | None:
        """The loaded shard of partition `index`, leadership checked first (None: not led here)."""
        loaded = self._current(index)
        return loaded.shard if loaded is not None else None

    # --- operations -------------------------------------------------------------------------------

    async def submit(self, index: int, op: O) -> A:
        """`op`'s answer, once its records are written; raises CoordinatorError (NOT_COORDINATOR
        when this broker does not lead partition `index`, or stops leading it before the answer)."""
        loaded = self._current(index)
        if loaded is None:
            raise _not_coordinator(self._log.name, index)
        return await self._enqueue(loaded, op)

    async def submit_transactional(self, index: int, op: O, txn: TxnWrite) -> A:
        """As `submit`, but `op`'s records are written as `txn`'s producer's transactional batch,
        alone; a refused write answers the coordinator's error for the log's (the producer's
        own errors pass as they are)."""
        if self._txn_writer is None:
            raise TypeError(f"{self._log.name} has no transactional writer")
        loaded = self._current(index)
        if loaded is None:
            raise _not_coordinator(self._log.name, index)
        return await self._enqueue(loaded, op, txn)

    def _partitions(self) -> list[Partition | None]:
        """The topic's partitions (none before it exists): hosted here, each a replica.Partition."""
        topic = self._log.topic()
        return cast(list[Partition | None], topic.partitions) if topic is not None else []

    def _current(self, index: int) -> _Loaded[R, O, A] | None:
        partitions = self._partitions()
        partition = partitions[index] if index < len(partitions) else None
        loaded = self._loaded.get(index)
        if loaded is not None and loaded.partition is not partition:
            self._unload(index)
            loaded = None
        if partition is None or not partition.is_leader:
            if loaded is not None:
                self._unload(index)
            return None
        return loaded if loaded is not None else self._load(index, partition)

    def _enqueue(self, loaded: _Loaded[R, O, A], op: O, txn: TxnWrite | None = None) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        loaded.queue.append((op, future, txn))
        if loaded.worker is None:
            loaded.worker = asyncio.create_task(self._run(loaded))
        return future

    async def _run(self, loaded: _Loaded[R, O, A]) -> None:
        try:
            while loaded.queue and not loaded.unloaded:
                batch = self._handle_batch(loaded)
                loaded.running = [future for future, _ in batch.answers]
                try:
                    await self._write(loaded, batch)
                except Exception as exc:
                    log.exception("%s-%d: writing failed", self._log.name, loaded.partition.index)
                    self._fail(loaded, batch, CoordinatorError(ErrorCode.unknown_server_error, str(exc)))
                finally:
                    loaded.running = []
        finally:
            loaded.worker = None

    def _handle_batch(self, loaded: _Loaded[R, O, A]) -> _Batch[R]:
        """Handle the queued operations (up to MAX_BATCH_OPS), each replaying its records at once
        so the next one sees them: their records are then written as one batch. A transactional
        write is a batch of its own (a refused write fails every operation of its batch): it
        waits for the next batch if this one has operations, and ends this one if it returned
        records."""
        batch: _Batch[R] = _Batch()
        while loaded.queue and len(batch.answers) < MAX_BATCH_OPS:
            op, future, txn = loaded.queue[0]
            if txn is not None and batch.answers:
                break
            loaded.queue.popleft()
            if future.done():  # its caller gave up waiting
                continue
            try:
                outcome = loaded.shard.handle(op)
            except CoordinatorError as exc:
                future.set_exception(exc)
                continue
            except Exception as exc:
                log.exception("%s-%d: operation %r failed", self._log.name, loaded.partition.index, op)
                future.set_exception(CoordinatorError(ErrorCode.unknown_server_error, str(exc)))
                continue
            if outcome.records and (self._writer if txn is None else self._txn_writer) is None:
                future.set_exception(TypeError(f"{self._log.name} has no writer for the records of {op!r}"))
                continue
            for record in outcome.records:
                loaded.shard.replay(record)
            batch.records.extend(outcome.records)
            batch.answers.append((future, outcome.answer))
            if txn is not None and outcome.records:
                batch.txn = txn
                break
        return batch

    async def _write(self, loaded: _Loaded[R, O, A], batch: _Batch[R]) -> None:
        """Write the batch's records, then answer its operations; a failed write answers each
        the coordinator's error for it, and puts the shard back as the log holds it unless the
        records were appended."""
        if batch.records:
            if batch.txn is not None:
                assert self._txn_writer is not None  # submit_transactional took none without one
                code = await self._txn_writer.append_transactional(loaded.partition, batch.records, batch.txn)
            else:
                assert self._writer is not None  # _handle_batch took no records without one
                code = await self._writer.append_records(loaded.partition, batch.records)
            if loaded.unloaded:  # answered NOT_COORDINATOR already; the shard is gone
                return
            if code is not ErrorCode.none:
                log.warning("%s-%d: writing the records of %d operations failed: %s", self._log.name,
                            loaded.partition.index, len(batch.answers), code.name)
                self._fail(loaded, batch, CoordinatorError(coordinator_error(code),
                                                           f"the records could not be written: {code.name}"),
                           appended=code in APPENDED)
                return
        loaded.undo.keep()
        for future, answer in batch.answers:
            if not future.done():
                future.set_result(answer)

    def _fail(self, loaded: _Loaded[R, O, A], batch: _Batch[R], error: CoordinatorError,
              appended: bool = False) -> None:
        for future, _ in batch.answers:
            if not future.done():
                future.set_exception(CoordinatorError(error.code, error.message))
        if loaded.unloaded:
            return
        if appended:
            loaded.undo.keep()
            return
        reverted = loaded.undo.revert()
        if reverted:
            log.info("%s-%d: %d keys put back as the log holds them", self._log.name, loaded.partition.index,
                     reverted)

    # --- inside -----------------------------------------------------------------------------------

    def _load(self, index: int, partition: Partition) -> _Loaded[R, O, A]:
        loaded: _Loaded[R, O, A]

        def submit_timed(op: O) -> None:
            if not loaded.unloaded:
                self._enqueue(loaded, op).add_done_callback(self._timed_done)
        timer: ShardTimer[O] = ShardTimer(self.clock, submit_timed)
        undo = UndoLog()
        shard = self._new_shard(ShardContext(partition, self.clock, timer, undo))
        replayed = 0
        for record in self._log.replay_partition(partition):
            shard.replay(record)
            replayed += 1
        shard.loaded()
        undo.recording = True  # what the log holds is loaded: from now on a replay's change may be undone
        log.info("coordinating %s-%d (leader epoch %d): %d records replayed", self._log.name, partition.index,
                 partition.leader_epoch, replayed)
        loaded = _Loaded(partition, shard, timer, undo)
        self._loaded[index] = loaded
        return loaded

    def _unload(self, index: int) -> None:
        loaded = self._loaded.pop(index)
        loaded.unloaded = True
        loaded.timer.cancel_all()
        waiting = loaded.running + [future for _, future, _ in loaded.queue]
        loaded.queue.clear()
        for future in waiting:
            if not future.done():
                future.set_exception(_not_coordinator(self._log.name, index))
        loaded.shard.unloaded()
        log.info("no longer coordinating %s-%d: %d operations answered NOT_COORDINATOR", self._log.name, index,
                 len(waiting))

    @staticmethod
    def _timed_done(future: asyncio.Future) -> None:
        """A timer's operation has no one waiting for its answer: a failure is logged here."""
        if not future.cancelled() and future.exception() is not None:
            log.info("a timed coordinator operation failed: %s", future.exception())
