"""The commitlog store's background checkpoint (store.background_flush) when its file cannot be
written, as on a full disk: a warning, the last checkpoint stands (a recovery re-dispatches from
it), and the next round writes one. The failure is a real one: a directory where the checkpoint's
temporary file goes."""

from __future__ import annotations

import logging

from segment.rocket.checkpoint import CHECKPOINT, read_checkpoint
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config
from segment.tests.segment_batches import make_batch

CFG = log_config()


def _grow_a_commitlog_file(store: RocketLogStore, plog) -> None:
    """Appends until a commitlog file's worth is dispatched past the last checkpoint (one is due)."""
    while not store.background_flush_due():
        plog.append(make_batch(1, value_size=10), 0, 1_000)
        store.commit_writes()


def test_a_checkpoint_the_disk_cannot_take_is_a_warning_and_the_next_round_writes_it(tmp_path, caplog):
    store = RocketLogStore(tmp_path, commitlog_file_size=4096, queue_entries_per_file=4, index_slots=16,
                           index_entries=64)
    plog = store.open_partition("t", 0, CFG)
    store.checkpoint()
    before = read_checkpoint(store.dir).commitlog
    _grow_a_commitlog_file(store, plog)
    blocker = store.dir / (CHECKPOINT + ".tmp")
    blocker.mkdir()  # the file cannot be made there
    with caplog.at_level(logging.WARNING):
        store.background_flush()
    assert "commitlog checkpoint not written" in caplog.text
    assert read_checkpoint(store.dir).commitlog == before  # the last one stands
    blocker.rmdir()
    _grow_a_commitlog_file(store, plog)
    store.background_flush()
    assert read_checkpoint(store.dir).commitlog > before
    store.close()


def test_a_periodic_flush_whose_checkpoint_the_disk_cannot_take_is_a_warning(tmp_path, caplog):
    store = RocketLogStore(tmp_path, commitlog_file_size=1 << 20, queue_entries_per_file=4, index_slots=16,
                           index_entries=64)
    plog = store.open_partition("t", 0, CFG)
    store.checkpoint()
    plog.append(make_batch(1, value_size=10), 0, 1_000)
    store.commit_writes()
    (store.dir / (CHECKPOINT + ".tmp")).mkdir()
    with caplog.at_level(logging.WARNING):
        store.flush()  # the commitlog fsynced; where it is durable not recorded
    assert "commitlog checkpoint not written" in caplog.text
    assert read_checkpoint(store.dir).flushed < store.commitlog.flushed_pos
    (store.dir / (CHECKPOINT + ".tmp")).rmdir()
    store.close()
