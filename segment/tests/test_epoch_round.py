"""Leader-epoch files written in rounds (leader_epoch_cache.write_epochs_round): the files of
many changed caches cost two syncs in all, not two fsyncs each, and hold the caches after.

A first produce after a start gives every partition a new epoch; a clean stop of 10,000
commitlog partitions then spent 31 s fsyncing their epoch files one by one (py-spy)."""

from __future__ import annotations

import pytest
from segment.tests.segment_batches import make_batch

from segment.fsync_count import fsyncs
from segment.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT, ROUND_MIN, EpochEntry, LeaderEpochCache, write_epochs_round
from segment.tests.log_engines import CFG, ENGINES, Engine

PARTITIONS = 12


def synced(before: dict[str, int]) -> int:
    """fsyncs and syncfs calls for checkpoint files and directories since `before`."""
    now = fsyncs()
    return sum(now.get(k, 0) - before.get(k, 0) for k in ("checkpoint", "directory"))


def test_a_round_costs_two_syncs_and_leaves_the_files_whole(tmp_path):
    caches = []
    for i in range(PARTITIONS):
        (tmp_path / str(i)).mkdir()
        cache = LeaderEpochCache(tmp_path / str(i) / LEADER_EPOCH_CHECKPOINT)
        cache.assign(3, 0)
        cache.assign(5, 10 + i)
        caches.append(cache)
    before = fsyncs()
    write_epochs_round(caches)
    assert synced(before) == 2
    for i in range(PARTITIONS):
        again = LeaderEpochCache(tmp_path / str(i) / LEADER_EPOCH_CHECKPOINT)
        assert again.loaded and again.entries == [EpochEntry(3, 0), EpochEntry(5, 10 + i)]
        assert sorted(p.name for p in (tmp_path / str(i)).iterdir()) == [LEADER_EPOCH_CHECKPOINT]
    before = fsyncs()
    write_epochs_round(caches)  # nothing changed since
    assert synced(before) == 0


def test_a_few_changed_files_are_written_one_by_one(tmp_path):
    """No syncfs (every dirty file of the filesystem) for the odd new epoch."""
    caches = [LeaderEpochCache(tmp_path / f"{i}-{LEADER_EPOCH_CHECKPOINT}") for i in range(ROUND_MIN)]
    for cache in caches:
        cache.assign(1, 0)
    before = fsyncs()
    write_epochs_round(caches)
    assert synced(before) == 2 * ROUND_MIN  # replace_file: the file, then its directory


def test_a_cache_truncated_after_it_was_staged_keeps_the_cut(tmp_path):
    """A truncation that rewrote the file between a round's staging and its rename wins."""
    cache = LeaderEpochCache(tmp_path / LEADER_EPOCH_CHECKPOINT)
    cache.assign(1, 0)
    cache.assign(2, 50)
    staged = cache._stage()
    cache.truncate_from_end(50)  # writes the file itself
    assert not cache._publish(staged)
    assert not staged.tmp.exists()
    assert LeaderEpochCache(cache.path).entries == [EpochEntry(1, 0)]


@pytest.mark.parametrize("kind", ENGINES)
def test_a_clean_stop_writes_the_new_epochs_of_all_partitions_in_one_round(tmp_path, kind):
    engine = Engine(kind, tmp_path)
    for p in range(PARTITIONS):
        engine.store.open_partition("t", p, CFG).append(make_batch(1), 7, 1_000)
    engine.request_done()
    before = fsyncs()
    engine.store.close()
    # the round's two syncs, and the store's own checkpoint files: not two per partition
    assert synced(before) < PARTITIONS
    engine.store = engine._open()
    for p in range(PARTITIONS):
        epochs = engine.store.open_partition("t", p, CFG).epochs
        assert epochs.loaded and epochs.entries == [EpochEntry(7, 0)]
