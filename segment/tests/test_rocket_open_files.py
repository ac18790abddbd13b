"""The commitlog store's per-partition files (consume queues, compacted generations) under the bound
on open files (segment/open_files.py): never more open than the bound, every entry readable after
its file was closed, a restart (clean or not) finds every partition whole, a dirty file is fsynced
before it closes, an fsync that fails then takes the store offline instead of being forgotten, and
a fetch's region of a compacted generation reads the same bytes after the generation is gone; a
new partition's queue files are made when it is prepared (its first write creates none), and a
crash before that write leaves an empty log."""

from __future__ import annotations

import errno
import os
import shutil

import pytest

from segment import open_files as open_files_module
from segment.log import LogOffline
from segment.open_files import OpenFiles
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config
from segment.tests.open_descriptors import fds_under
from segment.tests.segment_batches import make_batch, read_offsets

CFG = log_config()
BOUND = 6
PARTITIONS = 24
ROUNDS = 5  # queue files of 2 entries: 3 files (6 descriptors if all open) per partition


def open_store(path, bound: int = BOUND) -> RocketLogStore:
    return RocketLogStore(path, commitlog_file_size=1 << 16, queue_entries_per_file=2, index_slots=64,
                          index_entries=1000, open_files=OpenFiles(bound))


def queue_fds(root) -> list[str]:
    """This process's descriptors on consume-queue files under `root`."""
    return [path for path in fds_under(root) if "/consumequeue/" in path]


def produce_rounds(store, root) -> dict[int, int]:
    """ROUNDS batches into every partition, interleaved as one request per round; the bound is
    checked after each request. Returns each partition's record count."""
    logs = [store.open_partition("t", p, CFG) for p in range(PARTITIONS)]
    for r in range(ROUNDS):
        for p, plog in enumerate(logs):
            plog.append(make_batch(1 + (p + r) % 3, ts=1_000 + r), 0, 1_000 + r)
        store.commit_writes()
        assert len(queue_fds(root)) <= BOUND
    return {p: plog.log_end_offset for p, plog in enumerate(logs)}


def check_every_partition(store, root, ends: dict[int, int]) -> None:
    for p, end in ends.items():
        plog = store.open_partition("t", p, CFG)
        assert plog.log_end_offset == end
        assert read_offsets(plog, plog.read(0, 1 << 20, end)) == list(range(end))
        for offset in range(end):  # each lookup bisects the queue files, reopened as needed
            assert read_offsets(plog, plog.read(offset, 1, end))[0] <= offset
        assert plog.offset_for_timestamp(1_000 + ROUNDS - 1)[0] < end
        assert len(queue_fds(root)) <= BOUND


def test_every_entry_reads_back_under_a_small_bound_and_after_restarts(tmp_path):
    store = open_store(tmp_path / "data")
    ends = produce_rounds(store, tmp_path)
    assert store.open_files.evictions > PARTITIONS * ROUNDS  # the bound was what held them
    check_every_partition(store, tmp_path, ends)

    crashed = tmp_path / "crash"  # kill -9 after the last request: files as written, no checkpoint since
    shutil.copytree(tmp_path / "data", crashed)
    store.close()
    store = open_store(crashed)
    assert store.abnormal
    check_every_partition(store, tmp_path, ends)
    store.close()

    store = open_store(tmp_path / "data")  # a clean restart
    assert not store.abnormal
    check_every_partition(store, tmp_path, ends)
    store.delete_partition("t", 0)  # a deleted queue's files close at once
    assert not [p for p in queue_fds(tmp_path) if "/t/0/" in p]
    store.close()


def test_an_idle_dirty_queue_file_closes_at_once_and_the_next_checkpoint_fsyncs_it(tmp_path, monkeypatch):
    store = open_store(tmp_path, bound=2)
    hot = store.open_partition("t", 0, CFG)
    hot.append(make_batch(1), 0, 1_000)
    store.commit_writes()  # t-0's two queue files written, not fsynced (no checkpoint yet)
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(open_files_module.os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")),
                                                                   real_fsync(fd)))
    store.open_partition("t", 1, CFG).append(make_batch(1), 0, 1_000)
    store.commit_writes()  # t-1's files take the two places: t-0's close, on the event loop, unsynced
    assert [p for p in synced if "/consumequeue/t/0/0" in p] == [] and not any("/t/0/" in p for p in queue_fds(tmp_path))
    store.checkpoint()  # which then counts t-0's entries durable: it fsyncs them first
    assert sorted(os.path.basename(p) for p in synced if "/consumequeue/t/0/0" in p) == [
        "00000000000000000000", "00000000000000000000.time"]
    assert len(queue_fds(tmp_path)) <= 2


def test_a_failed_fsync_of_a_closed_queue_file_takes_the_store_offline(tmp_path, monkeypatch):
    """EIO from the fsync of a queue file that was closed with unsynced entries: the checkpoint
    (which would count those entries durable) takes the store offline until a restart
    recovers, and the partition's queue is not served again."""
    store = open_store(tmp_path, bound=2)
    hot = store.open_partition("t", 0, CFG)
    hot.append(make_batch(2), 0, 1_000)
    store.commit_writes()
    store.open_partition("t", 1, CFG).append(make_batch(1), 0, 1_000)
    store.commit_writes()  # closes t-0's files, unsynced
    real_fsync = os.fsync

    def eio_on_t0(fd):  # the disk under t-0's queue fails (os is one module: filter by path)
        if "/t/0/" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_fsync(fd)

    monkeypatch.setattr(open_files_module.os, "fsync", eio_on_t0)
    with pytest.raises(LogOffline):
        store.checkpoint()
    monkeypatch.undo()
    assert store.offline is not None
    with pytest.raises(LogOffline):
        hot.read(0, 1 << 20, 2)
    with pytest.raises(LogOffline):
        hot.append(make_batch(1), 0, 1_000)


def test_a_compacted_generation_is_bounded_and_its_regions_outlive_the_next_swap(tmp_path):
    """A compacted partition's own data file (compacted_log.py) is under the same bound, and a
    fetch's region of it keeps reading the same bytes while the next round's swap deletes it."""
    from segment.tests.commitlog_cleaner_logs import CFG as COMPACT, NOW, write_log

    from segment.rocket import log_cleaner

    store = RocketLogStore(tmp_path, commitlog_file_size=2048, queue_entries_per_file=4, index_slots=8,
                           index_entries=64, file_delete_delay_ms=0, open_files=OpenFiles(2))
    rounds = [([(b"k%d" % (i % 3), b"v%d" % i)], (-1, -1, -1)) for i in range(30)]
    plog = write_log(store, rounds, COMPACT)
    assert log_cleaner.clean(plog, 0, NOW, memory_bytes=1 << 20).end_offset is not None
    first = plog.compacted
    regions = plog.read(0, 1 << 20, first.end)
    expected = [first.read(first.entry(i)) for i in range(len(first))]
    assert [os.readlink(f"/proc/self/fd/{r.fd}") for r in regions] == [str(first.path)] * len(regions)

    write_log(store, rounds, COMPACT)  # the queue files of t-0 and u-0 push the generation's file out
    assert store.open_files.handle_if_open(first.data) is None
    assert log_cleaner.clean(plog, 0, NOW, memory_bytes=1 << 20).end_offset is not None
    assert plog.compacted is not first and not first.path.exists()  # the swap deleted it
    assert [os.pread(r.fd, r.size, r.position) for r in regions] == expected
    del regions
    assert len([p for p in queue_fds(tmp_path) if ".compacted" in p]) <= 1
    assert len(queue_fds(tmp_path)) <= 2
    store.close()


def test_a_new_partition_s_first_write_creates_no_file(tmp_path, monkeypatch):
    """prepare_partition (the admin worker) makes the queue's first pair of files, empty and
    closed; the first writes, on the event loop, only open them: creating them there cost
    ~0.5 ms each, seconds for a first produce to 5,000 new partitions. A roll creates the next."""
    store = open_store(tmp_path)
    prepared = [store.prepare_partition("t", p, CFG) for p in range(PARTITIONS)]
    for plog in prepared:
        assert sorted(p.name for p in plog.queue.dir.iterdir() if p.name.startswith("0")) == [
            "00000000000000000000", "00000000000000000000.time"]
        assert (plog.queue.dir / "00000000000000000000").stat().st_size == 0
    assert queue_fds(tmp_path) == [] and len(store.open_files) == 0
    logs = [store.install_partition(plog) for plog in prepared]
    created = []
    real_open = os.open

    def watched_open(path, flags, *args):
        if flags & os.O_CREAT and "/consumequeue/" in str(path):
            created.append(os.path.basename(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(open_files_module.os, "open", watched_open)
    for r in range(3):  # 2 entries a file: the third batch rolls to the next pair
        for plog in logs:
            plog.append(make_batch(1), 0, 1_000)
        store.commit_writes()
        assert len(queue_fds(tmp_path)) <= BOUND
        if r < 2:
            assert created == []
    monkeypatch.undo()
    assert sorted(set(created)) == ["00000000000000000002", "00000000000000000002.time"]
    assert len(created) == 2 * PARTITIONS
    for plog in logs:
        assert read_offsets(plog, plog.read(0, 1 << 20, 3)) == [0, 1, 2]
    store.close()


def stored_offsets(store, partition: int) -> list[int]:
    plog = store.open_partition("t", partition, CFG)
    assert plog.log_start_offset == 0
    offsets = read_offsets(plog, plog.read(0, 1 << 20, plog.log_end_offset))
    assert offsets == list(range(plog.log_end_offset))
    return offsets


@pytest.mark.parametrize("left", [("", ".time"), ("",), (".time",), ()],
                         ids=["both-empty", "entries-only", "time-only", "none"])
def test_a_crash_before_the_first_write_leaves_an_empty_queue(tmp_path, left):
    """kill -9 after a partition was created, before its first write: its queue files are empty
    (or, torn by the crash, only one of them or neither made). It recovers as an empty log that
    takes writes, beside a partition with batches."""
    store = open_store(tmp_path / "data")
    new = store.open_partition("t", 0, CFG)
    old = store.open_partition("t", 1, CFG)
    for n in (2, 1, 3):
        old.append(make_batch(n), 0, 1_000)
    store.commit_writes()
    crashed = tmp_path / "crash"
    shutil.copytree(tmp_path / "data", crashed)
    store.close()
    queue_dir = crashed / new.queue.dir.relative_to(tmp_path / "data")
    for suffix in ("", ".time"):
        path = queue_dir / f"00000000000000000000{suffix}"
        path.unlink(missing_ok=True)
        if suffix in left:
            path.touch()
    store = open_store(crashed)
    assert store.abnormal
    assert (len(stored_offsets(store, 0)), len(stored_offsets(store, 1))) == (0, 6)
    new = store.open_partition("t", 0, CFG)
    for n in (1, 2, 1):
        new.append(make_batch(n), 0, 1_000)
    store.commit_writes()
    assert (len(stored_offsets(store, 0)), len(stored_offsets(store, 1))) == (4, 6)
    store.close()
    store = open_store(crashed)
    assert (len(stored_offsets(store, 0)), len(stored_offsets(store, 1))) == (4, 6)
    store.close()
