"""cleaner-offset-checkpoint: a cleaned log is not due again after a restart, and an entry
outside its log's range (or recorded for another log) is not used."""

from __future__ import annotations


from segment.compaction.cleaner_checkpoint import CLEANER_CHECKPOINT, CleanerCheckpoint
from segment.kafka import log_cleaner
from segment.kafka.store import SegmentLogStore
from segment.tests.compaction_batches import client_batch
from segment.tests.log_configs import log_config

NOW = 10_000_000
CFG = log_config(segment_bytes=600, index_interval_bytes=128, cleanup_policy="compact",
                 min_cleanable_dirty_ratio=0.0)
KEY = ("t", 0)


def write_log(store, batches: int):
    plog = store.open_partition(*KEY, CFG)
    for i in range(batches):
        records = [(f"k{(i * 3 + j) % 7}".encode(), b"v" * 40, []) for j in range(3)]
        plog.append(bytearray(client_batch(records, base_ts=NOW - 5000)), 0, NOW - 5000)
    return plog


def test_a_cleaned_log_is_not_due_after_a_restart(tmp_path):
    store = SegmentLogStore(tmp_path)
    plog = write_log(store, 40)
    checkpoint = CleanerCheckpoint(tmp_path / CLEANER_CHECKPOINT)
    first_dirty = checkpoint.first_dirty(KEY, plog)
    assert first_dirty == 0 and log_cleaner.due(plog, first_dirty, NOW)
    stats = log_cleaner.clean(plog, first_dirty, NOW, 1 << 20)
    assert stats.end_offset and stats.end_offset > 0
    checkpoint.cleaned(KEY, plog, stats.end_offset)
    store.close()

    store = SegmentLogStore(tmp_path)  # the restart
    plog = store.open_partition(*KEY, CFG)
    first_dirty = CleanerCheckpoint(tmp_path / CLEANER_CHECKPOINT).first_dirty(KEY, plog)
    assert first_dirty == stats.end_offset
    assert not log_cleaner.due(plog, first_dirty, NOW)
    assert log_cleaner.due(plog, plog.log_start_offset, NOW), "from the log start it would be cleaned again"
    store.close()


def test_an_entry_past_the_log_end_is_dropped(tmp_path):
    """A checkpoint beyond the log's end belongs to an older log of that name: the clean starts
    at the log start, and the entry does not come back once the new log grows past it."""
    store = SegmentLogStore(tmp_path)
    plog = write_log(store, 5)  # offsets 0-14
    CleanerCheckpoint(tmp_path / CLEANER_CHECKPOINT).cleaned(KEY, plog, 60)
    checkpoint = CleanerCheckpoint(tmp_path / CLEANER_CHECKPOINT)
    assert checkpoint.first_dirty(KEY, plog) == 0
    write_log(store, 30)  # offsets up to 104
    assert checkpoint.first_dirty(KEY, plog) == 0
    store.close()


def test_an_entry_below_the_log_start_gives_the_log_start(tmp_path):
    store = SegmentLogStore(tmp_path)
    plog = write_log(store, 40)
    plog.delete_records_before(30)
    checkpoint = CleanerCheckpoint(tmp_path / CLEANER_CHECKPOINT)
    checkpoint.cleaned(KEY, plog, 12)
    assert checkpoint.first_dirty(KEY, plog) == plog.log_start_offset == 30
    store.close()


def test_an_entry_recorded_for_another_log_is_dropped(tmp_path):
    """The topic deleted and created again while the broker runs: a new log object whose range
    may well hold the old entry."""
    old = write_log(SegmentLogStore(tmp_path / "old"), 40)
    new = write_log(SegmentLogStore(tmp_path / "new"), 40)
    checkpoint = CleanerCheckpoint(tmp_path / CLEANER_CHECKPOINT)
    checkpoint.cleaned(KEY, old, 50)
    assert checkpoint.first_dirty(KEY, old) == 50
    assert checkpoint.first_dirty(KEY, new) == 0


def test_a_malformed_file_reads_as_empty(tmp_path):
    store = SegmentLogStore(tmp_path)
    plog = write_log(store, 40)
    (tmp_path / CLEANER_CHECKPOINT).write_text("0\n3\nt 0 50\n")  # says 3 entries, holds 1
    assert CleanerCheckpoint(tmp_path / CLEANER_CHECKPOINT).first_dirty(KEY, plog) == 0
    store.close()
