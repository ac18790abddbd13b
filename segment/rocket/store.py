"""All commitlog-mode partitions of a broker, laid out as RocketMQ's store.

    <data-dir>/commitlog-store/
        commitlog/                       commitlog.py: every partition's batches, in arrival order
        consumequeue/<topic>/<partition>/ consume_queue.py: where each batch of a partition is
                                         (files open only while the bound on open files allows),
                                         the partition's leader-epoch-checkpoint
                                         (leader_epoch_cache.py: it replicates on its own)
                                         and its aborted.txnindex (segment/txn_index.py)
        index/                           index_file.py: record key -> commitlog offset
            <C>.compacted ...            compacted_log.py: a compacted partition's batches below C
        checkpoint                       checkpoint.py: how far the files above are durable
        abort                            exists while the store is open

Append writes one unit to the commitlog and dispatches it (dispatch.py) before
returning, so a batch is readable as soon as append returns. The store owns every
queue on disk, opened or not: recovery must re-dispatch into all of them, and
commitlog files may only go when no queue still needs them.

Freeing commitlog files (`collect`): RocketMQ deletes commitlog files by age
alone (fileReservedTime), which would let one partition's retention cut another's
data. Here a file is deleted once it ends at or before the first live batch of
every queue (the batch holding its log start offset; a queue whose log start has
reached its end holds nothing back) and before the last checkpoint, never the
active file. A partition with long retention therefore keeps the files its
batches share with others: disk use follows the longest-retained partition, the
price of one shared sequential log. Index files go once all their entries point
below the first commitlog file. A compacted partition (log_cleaner.py) needs its
queue's batches only from the end of its compacted generation on.

Durability: `flush_logs` (the write path's group commit, in a worker thread)
fsyncs the commitlog once for every partition waiting on it, one file whatever
the partition, which makes their acked batches survive a crash: recovery
re-derives every queue and index entry past the last checkpoint from the commitlog.
A full checkpoint (checkpointer.py: all queues, the index, then the checkpoint file) runs once a
minute, or once the commitlog grew by a file, in the background
(`background_flush`, from the broker's periodic flush), on `flush()`, on delete_partition and on close, and
bounds how much commitlog a recovery re-reads; no acknowledgement waits for it.

Crash behaviour: see dispatch.py (recovery) and checkpoint.py. A partition being
deleted is renamed to `<partition>.<uuid>-delete` first and removed at the next
open if a crash interrupted it (segment/partition_removal.py); a checkpoint
follows the removal, so its units are not re-dispatched; a crash before it
re-dispatches them into a queue of no topic, removed at start-up as an orphan.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from segment.log import LogConfig, LogOffline, PartitionLog, StorageError
from segment.log_store import LogStore
from segment.open_files import OpenFiles
from segment.partition_removal import DELETE_SUFFIX, PartitionRemoval
from wire.record_batch import BatchHeader

from . import unit_format as uf
from .checkpoint import MeasuredSize, mark_clean, mark_running, read_checkpoint
from .checkpointer import Checkpointer
from .commitlog import CommitLog
from .compacted_log import CompactedLog
from .consume_queue import ConsumeQueue
from .log_cleaner import open_generation, recover_interrupted_clean
from .dispatch import Dispatcher
from .index_file import IndexService
from .partition_log import RocketPartitionLog

log = logging.getLogger(__name__)

STORE_DIR = "commitlog-store"


class RocketLogStore(LogStore):
    def __init__(
        self,
        data_dir: Path,
        *,
        commitlog_file_size: int = 1 << 30,
        queue_entries_per_file: int = 300_000,
        index_slots: int = 5_000_000,
        index_entries: int = 20_000_000,
        index_keys: bool = True,
        file_delete_delay_ms: int = 60_000,
        wanted: Callable[[str, int], bool] | None = None,
        open_files: OpenFiles | None = None,
    ) -> None:
        """`wanted(topic, partition)`: whether a partition found on disk belongs to a topic;
        the others are not opened, only listed for removal (detach_orphans). `open_files`: the
        bound on open consume-queue files, shared with the broker's segment store (default:
        one of half the RLIMIT_NOFILE)."""
        self.open_files = open_files if open_files is not None else OpenFiles()
        self.dir = Path(data_dir) / STORE_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        self.queue_entries_per_file = queue_entries_per_file
        self.abnormal = mark_running(self.dir)
        if self.abnormal:
            log.warning("%s was not closed cleanly: recovering from its checkpoint", self.dir)
        last_checkpoint = read_checkpoint(self.dir)
        self.queue_root = self.dir / "consumequeue"
        self.queue_root.mkdir(exist_ok=True)
        self.commitlog = CommitLog(self.dir / "commitlog", commitlog_file_size, file_delete_delay_ms)
        self.index = IndexService(self.dir / "index", index_slots, index_entries) if index_keys else None
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}
        self.logs: dict[tuple[str, int], RocketPartitionLog] = {}
        self.log_start: dict[tuple[str, int], int] = {}
        # Directories to remove, found in one pass and never opened: a deleted partition's, and
        # (with `wanted`) those of topics that no longer exist (detach_orphans hands them over).
        leftovers: list[Path] = []
        for topic_dir in sorted(p for p in self.queue_root.iterdir() if p.is_dir()):
            for part_dir in sorted(topic_dir.iterdir()):
                if part_dir.name.endswith(DELETE_SUFFIX):
                    leftovers.append(part_dir)
                elif part_dir.name.isdigit():
                    key = (topic_dir.name, int(part_dir.name))
                    if wanted is None or wanted(*key):
                        self.queues[key] = ConsumeQueue(part_dir, key[0], key[1], queue_entries_per_file,
                                                        self.open_files)
                    else:
                        leftovers.append(part_dir)
        self.dispatcher = Dispatcher(self.commitlog, self.queues, self.index, self._make_queue)
        self.checkpoints = Checkpointer(self.dir, last_checkpoint, commitlog=self.commitlog, index=self.index,
                                        dispatcher=self.dispatcher, queues=self.queues, logs=self.logs,
                                        log_start=self.log_start, fsync_commitlog=self._fsync_commitlog,
                                        go_offline=self.go_offline)
        self.dispatcher.recover(last_checkpoint, self.abnormal)
        self.dispatcher.recover_aborted()
        # Recovery re-opens a queue it dispatches into: that one is detached as an orphan instead.
        reopened = {q.dir for q in self.queues.values()}
        self._leftovers = [d for d in leftovers if d not in reopened]
        for q in self.queues.values():
            q.write_pending()  # what recovery re-dispatched, before a checkpoint counts it
        self._unwritten: set[ConsumeQueue] = set()  # queues with entries write_pending has not written
        self._starts_moved = False  # log starts moved by DeleteRecords, not yet checkpointed (log_starts_moved)
        self.compacted: dict[tuple[str, int], CompactedLog] = {}
        for key, q in self.queues.items():
            recover_interrupted_clean(q.dir)
            generation = open_generation(q.dir, key[0], self.open_files)
            if generation is not None:
                self.compacted[key] = generation
        for key, q in self.queues.items():
            self._init_log_start(key, q)
        self.offline: str | None = None  # why the store stopped serving (LogOffline), until restart
        if self.abnormal:
            self.checkpoint()  # what recovery rebuilt is durable: the next crash starts from here

    def _make_queue(self, topic: str, partition: int) -> ConsumeQueue:
        return ConsumeQueue(self.queue_root / topic / str(partition), topic, partition, self.queue_entries_per_file,
                            self.open_files)

    def _init_log_start(self, key: tuple[str, int], q: ConsumeQueue) -> None:
        """The checkpointed log start, raised to the first batch whose unit is still in the commitlog."""
        start = self.checkpoints.last.log_start.get(key, 0)
        generation = self.compacted.get(key)
        if generation is not None and start < generation.end:
            if q.last is None:  # nothing above the compacted batches (a truncation into them)
                q.empty_end = max(q.empty_end, generation.end)
            self.log_start[key] = start  # its batches below the end are in the compacted file, never collected
            return
        if q.last is None:
            q.empty_end = max(q.empty_end, start)
        if q.first_offset is not None:
            start = max(start, q.first_offset)
        i = q.first_phys_at_or_after(self.commitlog.min_offset)
        start = max(start, q.entry(i).base_offset if i < q.next_index else q.end_offset)
        self.log_start[key] = min(start, q.end_offset)

    # ----- LogStore -------------------------------------------------------------

    def prepare_partition(self, topic: str, partition: int, config: LogConfig) -> RocketPartitionLog:
        key = (topic, partition)
        queue = self.queues.get(key)
        made_empty = False  # an open queue (found at start) may hold entries, whatever made it
        if queue is None:
            queue = self._make_queue(topic, partition)
            made_empty = queue.made_empty
            # A new queue's log start; setdefault is one atomic dict step, and the checkpoint
            # (the only other thread that reads the dict) copies it whole.
            self.log_start.setdefault(key, 0)
        return RocketPartitionLog(self, queue, config, made_empty)

    def discard_prepared(self, plog: RocketPartitionLog) -> None:
        if self.queues.get((plog.topic, plog.partition)) is not plog.queue:
            plog.queue.forget_files()  # made by prepare_partition (an open queue stays open)

    def install_partition(self, plog: RocketPartitionLog) -> RocketPartitionLog:
        key = (plog.topic, plog.partition)
        self.queues.setdefault(key, plog.queue)
        return self.logs.setdefault(key, plog)

    def detach_partitions(self, keys: list[tuple[str, int]]) -> PartitionRemoval:
        """The queues go from every map at once; one checkpoint after their removal (not one
        per partition: that fsynced every queue for each, 27 ms a partition at 10,000)."""
        self.commit_writes()
        queues = []
        for key in keys:
            self.logs.pop(key, None)
            self.log_start.pop(key, None)
            q = self.queues.pop(key, None)
            if q is not None:
                queues.append(q)
            generation = self.compacted.pop(key, None)
            if generation is not None:
                generation.close()
        return PartitionRemoval([q.dir for q in queues], [q.forget_files for q in queues],
                                self._after_removal)

    def _after_removal(self, removed: list[Path]) -> None:
        """In the admin worker, after removed queues' directories went: drop topic directories
        left empty (a new queue's mkdir runs in the same worker, never meanwhile), then
        checkpoint."""
        for topic_dir in {d.parent for d in removed}:
            try:
                topic_dir.rmdir()
            except OSError:
                pass  # not empty: the topic has queues
        self.checkpoint()

    def reclaim(self) -> None:
        self.collect()  # the commitlog files only removed queues still needed go (after the delete delay)

    def existing_partitions(self) -> list[tuple[str, int]]:
        return sorted(self.queues)

    def flush(self) -> None:
        """The periodic flush (log.flush.interval.ms): fsync the commitlog, the one file that
        holds every partition, and record how far it is durable. Consume queues and the index
        are derived from it, so they are fsynced only with a full checkpoint, when one is due
        (checkpointer.py): after a crash recovery re-dispatches from that checkpoint.
        This is what makes a flush cost a few fsyncs whatever the partition count."""
        if not self.checkpoints.take_if_due():
            self.checkpoints.flushed(self._fsync_commitlog())

    def close(self) -> None:
        if self.offline is not None:
            log.warning("closing the offline commitlog store without a checkpoint: the next start recovers")
            return
        self.commit_writes()
        self.checkpoint()
        self.commitlog.close()
        for q in self.queues.values():
            q.close()
        for generation in self.compacted.values():
            generation.close()
        if self.index is not None:
            self.index.close()
        mark_clean(self.dir)

    # ----- used by RocketPartitionLog --------------------------------------------

    def append_batch(self, queue: ConsumeQueue, batch, header: BatchHeader, now_ms: int,
                     record_keys: set[bytes] | None = None) -> None:
        """Raises WriteRefused (no room: nothing changed) or LogOffline. `record_keys`: the
        batch's keys when the produce path's record check already collected them."""
        self.check_online()
        head, batch = uf.message_parts(queue.topic, queue.partition, header.base_offset, now_ms, batch)
        if self.index is not None:
            self.index.reserve(header.record_count, self.commitlog.write_pos)
        phys = self.commitlog.append(head, batch)
        self.dispatcher.message(queue, phys, len(head) + len(batch), header, batch, now_ms, record_keys)
        if not self._unwritten and self.on_pending_writes is not None:
            self.on_pending_writes()
        self._unwritten.add(queue)

    def truncate_queue(self, queue: ConsumeQueue, offset: int) -> bool:
        """Cut the queue back and record it in the commitlog, so recovery cuts it the same way.
        The unit carries where the log now ends, not the offset asked for: a replay may meet a
        queue whose files no longer hold the batch that offset fell in."""
        if queue.end_offset <= offset:
            return False
        end = queue.cut_point(offset)
        self.commitlog.append(uf.encode_truncate(queue.topic, queue.partition, end, int(time.time() * 1000)))
        self.commitlog.write_pending()  # in the file before the queue is cut: recovery replays the cut
        self.dispatcher.truncation(queue, end)
        self._unwritten.add(queue)
        self.commit_writes()  # only now may a checkpoint count the TRUNCATE unit
        return True

    def start_queue_at(self, queue: ConsumeQueue, offset: int) -> None:
        """Empty the queue and start its log at `offset`, recorded in the commitlog (a START_AT
        unit) so that recovery empties it the same way. The new log start is checkpointed only
        once the unit is fsynced: recovery caps a checkpointed start at the queue's end
        (_init_log_start), so a start written without the unit would leave the old batches'
        log empty at their end. A crash before the fsync leaves the log as it was; one between
        the fsync and the checkpoint leaves it empty at `offset`, or at the old start if that
        was higher (a raised empty end is all a checkpointed start can do)."""
        self.check_online()
        self.commitlog.append(uf.encode_start_at(queue.topic, queue.partition, offset, int(time.time() * 1000)))
        self.commitlog.write_pending()
        queue.start_at(offset)
        self._unwritten.add(queue)
        self.commit_writes()
        self._fsync_commitlog()
        self.log_start[(queue.topic, queue.partition)] = offset
        self.persist_log_starts()

    def log_starts_moved(self) -> None:
        """DeleteRecords moved a log start: checkpoint the starts and collect freed files once a
        request (commit_writes, before its answer), not once a partition. Off the broker: now."""
        first, self._starts_moved = not self._starts_moved, True
        if self.on_pending_writes is None:
            self.commit_writes()
        elif first and not self._unwritten:  # else the end of the turn is already due
            self.on_pending_writes()

    def commit_writes(self) -> None:
        """Write what appends left in memory: the commitlog's units, then the queues' entries.
        Only then does `dispatched` (what a checkpoint may count) move past them."""
        if self._starts_moved:
            self._starts_moved = False
            self.persist_log_starts()
            self.collect()  # writes the pending units too
        if not self._unwritten:
            return
        try:
            self.commitlog.write_pending()
            for q in self._unwritten:
                q.write_pending()
        except (OSError, StorageError) as exc:  # a failed write, or a queue file whose fsync at close failed
            raise self.go_offline(f"writing appended units failed: {getattr(exc, 'strerror', None) or exc}") from exc
        self._unwritten.clear()
        self.dispatcher.dispatched = self.commitlog.write_pos

    def check_online(self) -> None:
        if self.offline is not None:
            raise LogOffline(f"the commitlog store is offline: {self.offline}")

    def go_offline(self, reason: str) -> LogOffline:
        """The files' tail is no longer known: every partition of this store stops appending
        and reading until a restart recovers from the checkpoint (Kafka's offline log dir).
        Appends already answered in memory but not written are never acknowledged: the
        request that wrote them fails (dispatch closes its connection)."""
        if self.offline is None:
            self.offline = reason
            log.error("commitlog store %s offline until restart: %s", self.dir, reason)
        return LogOffline(f"the commitlog store is offline: {self.offline}")

    def _fsync_commitlog(self) -> int:
        self.check_online()
        try:
            return self.commitlog.flush()
        except OSError as exc:
            raise self.go_offline(f"fsync failed: {exc.strerror or exc}") from exc

    def flush_logs(self, logs: list[PartitionLog]) -> None:
        """The write path's fsync (group commit) of these partitions: one fsync of the commitlog
        covers them all, since every partition's records are in it (RocketMQ's
        GroupCommitService). Their queue entries are derived: after a crash, recovery
        re-dispatches every unit past the last checkpoint, so they are fsynced only with a
        checkpoint (as RocketMQ's FlushConsumeQueueService runs apart from the commit).
        Fsyncing each queue's two files as well took three fsyncs per acknowledgement. So are
        the leader-epoch files (and at a log's own flush and close), derived from the batches
        too: a file behind its log is rebuilt when the log opens (leader_epoch_cache.py).
        Written here, a partition's first batch of an epoch cost its acknowledgement two more
        fsyncs, of a new file and its directory: 20,000 records to 1,000 new partitions asked
        the disk for 729-891 flushes per 1,000 records, 255-262 without (bench/README.md)."""
        self._fsync_commitlog()

    def background_flush_due(self) -> bool:
        return self.checkpoints.due()

    def background_flush(self) -> None:
        """The checkpoint once one is due: the consume queues and the index fsynced apart from
        any acknowledgement (RocketMQ's FlushConsumeQueueService). In the write path it stalled
        every produce waiting on it for one fsync per queue file, 20,000 at 10,000 partitions."""
        self.checkpoints.take_if_due()  # still due: a flush.ms flush may have checkpointed meanwhile

    def checkpoint(self) -> None:
        """fsync every queue and the index, then record how far they and the commitlog go."""
        self.checkpoints.take()

    def checkpointed_size(self, key: tuple[str, int]) -> MeasuredSize | None:
        return self.checkpoints.size_of(key)

    def persist_log_starts(self) -> None:
        """Write the current log start offsets with the last checkpoint's positions (no fsync of data)."""
        self.checkpoints.persist_log_starts()

    def collect(self) -> int:
        """Delete commitlog (and index) files that no queue needs any more; returns bytes freed."""
        self.commit_writes()  # the checkpoint below may only count what is written
        limit = self.commitlog.write_pos
        for key, q in self.queues.items():
            generation = self.compacted.get(key)
            i = q.find(max(self.log_start.get(key, 0), generation.end if generation is not None else 0))
            if i is not None:
                limit = min(limit, q.entry(i).phys)
        files = self.commitlog.files
        if len(files) > 1 and files[0].end <= limit and files[0].end > self.checkpoints.last.commitlog:
            self.checkpoint()  # recovery must never need to re-read a file we delete
        limit = min(limit, self.checkpoints.last.commitlog)
        freed = self.commitlog.delete_files_before(limit)
        if freed and self.index is not None:
            self.index.delete_files_before(self.commitlog.min_offset)
        return freed
