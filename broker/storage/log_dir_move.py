"""Moving a partition's replica on this broker to the other layout's log dir, live (Kafka's
AlterReplicaLogDirs: ReplicaManager.alterReplicaLogDirs and ReplicaAlterLogDirsThread).

Each layout is a log dir here (DescribeLogDirs): the data dir for the segment layout,
`<data-dir>/commitlog-store` for the commitlog one. A move runs as Kafka's does:

1. A future log is made in the target layout's store (its file work in the admin worker).
2. Catch-up: the current log's batches are copied into it a chunk at a time, exactly as
   stored (FutureReplica: the follower's append, never re-encoded), while producers and
   consumers carry on against the current log. Finding a chunk is on the loop, reading its
   bytes in a thread, appending on the loop (where the target store is used); every
   FLUSH_BYTES the future is fsynced in the worker; replica.alter.log.dirs.io.max.bytes.per.second
   paces the copy, as it paces Kafka's ReplicaAlterLogDirsThread.
3. Once a pass reaches the end the log had when it began, the future is fsynced (worker),
   then the partition copies what is left (what arrived during that read) at once and from
   then on *mirrors* every append into the future too (ReplicaLog.mirror_into), so appends
   never wait; the future is fsynced again.
4. Commit: topics.json names the partition's new layout (TopicRegistry.change_layout); on the
   loop, in the same turn, the partition serves from the future log and the old log's files
   are detached and removed after file.delete.delay.ms (the commitlog's shared files go with
   its retention, as for a deleted partition).

A follower's truncation inside the window (its new leader's log diverged) ends the window with
no swap; the move copies the log again from its start and commits then.

Crash rule: topics.json decides. At start each partition opens in the layout topics.json
names, and its files in the other layout are orphans, removed (PartitionFiles.remove_orphans).
Before the commit the future is such an orphan (the move rolls back: it starts again only if
asked again); after it, the old log is (the move finishes). From step 3 to the swap every
acknowledged append is in both logs, so either answer holds all of them: never two live
copies, never none. Should a copy into the future fail inside the window (its disk fails),
topics.json is written back to the old layout at once; a kill between those two writes is
the one case where the new layout could lack the last appends.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from wire.error_codes import ErrorCode
from replica.future_replica import FutureReplica
from replica.partition import Partition

from broker.storage.modes import MODES, ROCKET_DIR
from broker.topic_names import TopicError

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20  # copied per turn of the loop: about a millisecond of appending
# fsynced as the catch-up goes: a whole log's dirty pages at once would be written back while
# the commit window's appends wait on them
FLUSH_BYTES = 32 << 20


def log_dir(data_dir: Path, mode: str) -> Path:
    """The log dir of a layout, as DescribeLogDirs names it."""
    return data_dir / ROCKET_DIR if mode == "commitlog" else data_dir


class _Move:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.task: asyncio.Task | None = None
        self.future: FutureReplica | None = None  # once its log is made


class LogDirMoves:
    """The moves in progress on this broker, one per partition at most."""

    def __init__(self, data_dir: Path, topics, storage, max_bytes_per_s: int | None = None) -> None:
        self.data_dir = Path(data_dir).resolve()
        self._topics, self._storage = topics, storage
        self._max_bytes_per_s = max_bytes_per_s  # replica.alter.log.dirs.io.max.bytes.per.second
        self._moves: dict[tuple[str, int], _Move] = {}

    def dirs(self) -> dict[str, Path]:
        """This broker's log dirs, storage mode -> path, as DescribeLogDirs names them."""
        return {m: log_dir(self.data_dir, m) for m in MODES}

    def mode_of_dir(self, path: str) -> str | None:
        """The layout whose log dir is `path` (absolute, as Kafka compares them), or None."""
        wanted = Path(path).resolve() if path.startswith("/") else None
        return next((m for m in MODES if log_dir(self.data_dir, m) == wanted), None)

    def future(self, topic: str, index: int) -> FutureReplica | None:
        """The future replica being filled, once its log exists."""
        move = self._moves.get((topic, index))
        return move.future if move is not None else None

    def request(self, topic, index: int, mode: str) -> None:
        """Move partition `index` of `topic` into `mode`'s log dir. Its own dir: nothing to
        do, and a move elsewhere in progress stops (as Kafka's futureReplicaDirChanged)."""
        key = (topic.name, index)
        running = self._moves.get(key)
        if running is not None:
            if running.mode == mode:
                return  # already on its way there
            running.task.cancel()
            del self._moves[key]
        if topic.mode_of(index) == mode:
            return
        move = self._moves[key] = _Move(mode)
        move.task = asyncio.create_task(self._move(topic, index, move))
        move.task.add_done_callback(lambda t: self._done(key, t))

    def _done(self, key, task: asyncio.Task) -> None:
        if key in self._moves and self._moves[key].task is task:
            del self._moves[key]
        if not task.cancelled() and task.exception() is not None:
            log.error("moving %s-%d failed", *key, exc_info=task.exception())

    async def stop(self) -> None:
        """At shutdown: end every move (a commit under way finishes first)."""
        tasks = [move.task for move in self._moves.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # ----- one move ------------------------------------------------------------------

    async def _move(self, topic, index: int, move: _Move) -> None:
        partition, mode = topic.partitions[index], move.mode
        source = topic.mode_of(index)
        store = self._storage.store(mode)
        plog = await self._topics.worker.run(store.prepare_partition, topic.name, index, partition.config)
        future = move.future = FutureReplica(store.install_partition(plog), mode)
        log.info("moving %s-%d from the %s to the %s layout", topic.name, index, source, mode)
        committed = False
        try:
            while True:
                await self._catch_up(topic, partition, future)
                generation = partition.generation
                committed = await self._commit(topic, index, partition, future, source)
                if committed or partition.generation == generation:
                    break  # moved; or deleted, or a copy into the future failed: the move stops
                future.restart()  # a follower's truncation ended the window: copy it again
        finally:
            if not committed:
                partition.replica_log.stop_mirror()
                self._topics.retire_files(topic, mode, [index])
                log.info("move of %s-%d to the %s layout stopped; its future log is removed",
                         topic.name, index, mode)

    def _gone(self, topic, partition: Partition) -> bool:
        return self._topics.topics.get(topic.name) is not topic or partition not in topic.partitions

    async def _catch_up(self, topic, partition: Partition, future: FutureReplica) -> None:
        """Copy chunks until a pass reaches the end the log had when it began, fsyncing the
        future every FLUSH_BYTES on the way, so that what the commit's on-loop copy and its
        fsync find left is what arrived during the last read."""
        unflushed = copied = 0
        loop = asyncio.get_running_loop()
        began = loop.time()
        while True:
            if self._gone(topic, partition):
                raise TopicError(ErrorCode.unknown_topic_or_partition, f"{topic.name}-{partition.index} was deleted")
            generation, end = partition.generation, partition.log_end_offset
            self._storage.commit_writes()  # the commitlog reads only written units
            regions = partition.replica_log.regions_for(future, CHUNK_BYTES)
            data = await asyncio.to_thread(future.fetch, partition, regions)
            if partition.generation != generation:  # truncated meanwhile: copy it again
                future.restart()
                continue
            appended = future.append(data)
            unflushed, copied = unflushed + appended, copied + appended
            self._storage.commit_writes()
            if future.log_end_offset >= end:
                break
            if self._max_bytes_per_s:  # no faster than this on average since the catch-up began
                ahead = began + copied / self._max_bytes_per_s - loop.time()
                if ahead > 0:
                    await asyncio.sleep(ahead)
            if unflushed >= FLUSH_BYTES:
                await self._topics.worker.run(future.log.flush)
                unflushed = 0
        await self._topics.worker.run(future.log.flush)

    async def _commit(self, topic, index: int, partition: Partition, future: FutureReplica, source: str) -> bool:
        self._storage.commit_writes()
        partition.replica_log.mirror_into(future)
        # What mirror_into copied may sit in the future engine's memory: written, then fsynced,
        # before the commit point (a kill right after the swap lost a log's tail held there)
        self._storage.commit_writes()
        await self._topics.worker.run(future.log.flush)

        def swap() -> bool:
            if self._gone(topic, partition) or not partition.replica_log.mirroring:
                return False
            partition.replica_log.swap_in(future)
            return True

        # Shielded: once topics.json may name the new layout, the swap must follow in this process.
        commit = asyncio.ensure_future(self._topics.change_layout(topic, index, future.target_mode, swap))
        try:
            swapped = await asyncio.shield(commit)
        except asyncio.CancelledError:
            swapped = await commit
            if not swapped:
                raise
        if not swapped:
            return False
        self._topics.retire_files(topic, source, [index])
        log.info("moved %s-%d to the %s layout at offset %d; its %s files are removed",
                 topic.name, index, future.target_mode, partition.log_end_offset, source)
        return True
