"""A new partition's files, made by prepare_partition in the admin worker (topic creation):
in a directory it has just made, nothing is listed or read and no descriptor is kept; a
directory that was already there (a crash's leftover) is still opened in full.

Listings are counted by wrapping os.scandir and os.listdir (pathlib's glob and iterdir use them).
Before this was counted, a new segment partition cost six listings of its empty directory and
held three descriptors in the store's bound (evicting older files at 50,000 partitions), and a
new commitlog queue two listings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from segment.tests.segment_batches import make_batch

from segment.kafka.store import SegmentLogStore
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config

ROCKET = dict(commitlog_file_size=4096, queue_entries_per_file=8, index_slots=64, index_entries=400)
CFG = log_config(segment_bytes=1024, index_interval_bytes=256)


def open_store(kind: str, path: Path):
    return SegmentLogStore(path) if kind == "segment" else RocketLogStore(path, **ROCKET)


@pytest.fixture
def listings(monkeypatch) -> list[str]:
    """The directories listed while the test runs."""
    listed: list[str] = []
    for name in ("scandir", "listdir"):
        real = getattr(os, name)

        def counting(path=".", _real=real):
            listed.append(os.fspath(path))
            return _real(path)

        monkeypatch.setattr(os, name, counting)
    return listed


@pytest.mark.parametrize("kind", ["segment", "commitlog"])
def test_new_partition_lists_nothing_and_keeps_no_descriptor(tmp_path, kind, listings):
    store = open_store(kind, tmp_path / "data")
    listings.clear()
    plog = store.install_partition(store.prepare_partition("t", 0, CFG))
    assert listings == []
    assert plog.made_empty
    assert len(store.open_files) == 0 and store.open_files.evictions == 0
    assert (plog.log_start_offset, plog.log_end_offset) == (0, 0)
    # the `.log` exists already: the first produce only opens it; the indexes are made by
    # their first entry, once index.interval.bytes are appended, as Kafka's lazy indexes
    if kind == "segment":
        assert [p.name for p in plog.dir.iterdir()] == ["00000000000000000000.log"]
    plog.append(make_batch(3), 0, 1_000)
    store.commit_writes()
    assert plog.log_end_offset == 3
    if kind == "segment":
        assert [p.name for p in plog.dir.iterdir()] == ["00000000000000000000.log"]
        while plog.active.size <= CFG.index_interval_bytes:
            plog.append(make_batch(3), 0, 1_000)
        plog.append(make_batch(3), 0, 1_000)
        assert sorted(p.name for p in plog.dir.iterdir()) == [
            "00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex"]
    store.close()
    reopened = open_store(kind, tmp_path / "data").open_partition("t", 0, CFG)
    assert reopened.log_end_offset == plog.log_end_offset and not reopened.made_empty


@pytest.mark.parametrize("kind", ["segment", "commitlog"])
def test_a_leftover_directory_is_opened_in_full(tmp_path, kind):
    """A directory already there (a create that crashed before topics.json, then the same topic
    created again before the orphan was removed) is read, not taken for empty."""
    store = open_store(kind, tmp_path / "data")
    plog = store.open_partition("t", 0, CFG)
    plog.append(make_batch(2), 0, 1_000)
    store.commit_writes()
    store.flush()
    store.close()
    store = open_store(kind, tmp_path / "data")
    again = store.install_partition(store.prepare_partition("t", 0, CFG))
    assert not again.made_empty
    assert again.log_end_offset == 2


def test_a_clean_start_opens_no_file_of_an_empty_segment_partition(tmp_path):
    """Sizes come from stat: an idle partition's files are opened by its first produce, not by
    the start (one that opened and evicted three files a partition at 50,000 partitions)."""
    store = open_store("segment", tmp_path / "data")
    store.install_partition(store.prepare_partition("t", 0, CFG))
    store.flush()
    store.close()
    store = open_store("segment", tmp_path / "data")
    reopened = store.open_partition("t", 0, CFG)
    assert not reopened.made_empty and reopened.log_end_offset == 0
    assert len(store.open_files) == 0 and store.open_files.evictions == 0
    reopened.append(make_batch(3), 0, 1_000)
    store.commit_writes()
    store.flush()
    store.close()
    again = open_store("segment", tmp_path / "data").open_partition("t", 0, CFG)
    assert again.log_end_offset == 3 and again.active.index.last_entry() is None
