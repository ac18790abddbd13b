"""A commitlog partition's size comes from the checkpoint at open, plus the batches past it, while
the count still describes the queue; otherwise the queue's batches are counted again. Each case
compares with a count of every live batch (`_measure`)."""

from __future__ import annotations

import shutil

from segment.tests.segment_batches import make_batch

from segment.rocket.checkpoint import read_checkpoint, write_checkpoint
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config

CFG = log_config()


def open_store(path):
    return RocketLogStore(path, commitlog_file_size=4096, queue_entries_per_file=4, index_slots=16, index_entries=64)


def append(store, plog, n: int) -> None:
    for _ in range(n):
        plog.append(make_batch(1, value_size=10), 0, 1_000)
        store.commit_writes()


def test_a_clean_reopen_takes_the_checkpointed_size_without_counting(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, CFG)
    append(store, plog, 9)
    size = plog.size_in_bytes
    store.close()
    # a size the batches do not add up to: taken as it is, so the queue was not walked
    ckpt = read_checkpoint(store.dir)
    ckpt.sizes[("t", 0)] = ckpt.sizes[("t", 0)]._replace(size=size + 1000)
    write_checkpoint(store.dir, ckpt)
    store = open_store(tmp_path)
    assert store.open_partition("t", 0, CFG).size_in_bytes == size + 1000
    store.close()


def test_after_a_crash_the_batches_past_the_checkpoint_are_added(tmp_path):
    store = open_store(tmp_path / "data")
    plog = store.open_partition("t", 0, CFG)
    append(store, plog, 6)
    store.checkpoint()
    append(store, plog, 5)
    shutil.copytree(tmp_path / "data", tmp_path / "crash")
    store.close()
    store = open_store(tmp_path / "crash")
    plog = store.open_partition("t", 0, CFG)
    assert plog.log_end_offset == 11
    assert plog.size_in_bytes == plog._measure() > 0
    store.close()


def test_a_count_of_a_log_cut_and_regrown_since_is_not_trusted(tmp_path):
    store = open_store(tmp_path / "data")
    plog = store.open_partition("t", 0, CFG)
    append(store, plog, 8)
    store.checkpoint()
    ckpt = read_checkpoint(store.dir)
    # the count says one byte more than the batches: trusted, it would show
    ckpt.sizes[("t", 0)] = ckpt.sizes[("t", 0)]._replace(size=ckpt.sizes[("t", 0)].size + 1)
    write_checkpoint(store.dir, ckpt)
    store.checkpoints.last = ckpt
    plog.truncate_to(5)
    append(store, plog, 3)  # other batches now end at offset 8
    store.commit_writes()
    shutil.copytree(tmp_path / "data", tmp_path / "crash")
    store.close()
    store = open_store(tmp_path / "crash")
    plog = store.open_partition("t", 0, CFG)
    assert plog.log_end_offset == 8
    assert plog.size_in_bytes == plog._measure()
    store.close()


def test_a_moved_log_start_is_counted_again(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, CFG)
    append(store, plog, 8)
    store.close()
    ckpt = read_checkpoint(store.dir)
    ckpt.sizes[("t", 0)] = ckpt.sizes[("t", 0)]._replace(size=1)
    ckpt.log_start[("t", 0)] = 3
    write_checkpoint(store.dir, ckpt)
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, CFG)
    assert plog.log_start_offset == 3
    assert plog.size_in_bytes == plog._measure() > 1
    store.close()
