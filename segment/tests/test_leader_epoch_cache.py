"""The leader-epoch cache against a list model, and its checkpoint file against Kafka's format.

The model is a plain list of (epoch, start) pairs changed by filters, where the cache works
by suffix removal and bisection: for a list strictly increasing in both fields the two must
agree, and a disagreement in any rule or in any OffsetForLeaderEpoch answer fails the walk.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from segment.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT, EpochEntry, LeaderEpochCache
from segment.log import WriteRefused
from segment.offset_checkpoint import read_checkpoint, write_checkpoint
from segment.tests.leader_epoch_model import model_end_offset_for

EPOCHS = st.integers(0, 8)
OFFSETS = st.integers(0, 30)  # small: offsets often meet entry starts exactly


class EpochCacheWalk(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = Path(tempfile.mkdtemp())
        self.cache = LeaderEpochCache(self.dir / LEADER_EPOCH_CHECKPOINT)
        self.model: list[tuple[int, int]] = []

    def teardown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(epoch=EPOCHS, start=OFFSETS)
    def assign(self, epoch, start):
        m = self.model
        if not (m and m[-1][0] == epoch and m[-1][1] <= start):
            self.model = [(e, s) for e, s in m if e < epoch and s < start] + [(epoch, start)]
        changed = self.cache.assign(epoch, start)
        assert changed == (self.model != m)

    @rule(epoch=EPOCHS, start=OFFSETS)
    def assign_if_newer(self, epoch, start):
        if not self.model or epoch > self.model[-1][0]:
            self.model = [(e, s) for e, s in self.model if s < start] + [(epoch, start)]
        self.cache.assign_if_newer(epoch, start)

    @rule(offset=OFFSETS)
    def truncate_from_end(self, offset):
        self.model = [(e, s) for e, s in self.model if s < offset]
        self.cache.truncate_from_end(offset)

    @rule(offset=OFFSETS)
    def truncate_from_start(self, offset):
        covering = [(e, s) for e, s in self.model if s <= offset]
        if covering:
            self.model = [(covering[-1][0], offset)] + [(e, s) for e, s in self.model if s > offset]
        self.cache.truncate_from_start(offset)

    @rule()
    def reopen(self):
        self.cache.write_if_changed()  # as the logs' flush and close
        self.cache = LeaderEpochCache(self.dir / LEADER_EPOCH_CHECKPOINT)

    @invariant()
    def same_entries(self):
        assert [tuple(e) for e in self.cache.entries] == self.model
        assert self.cache.latest_epoch() == (self.model[-1][0] if self.model else -1)

    @invariant()
    def strictly_increasing(self):
        entries = self.cache.entries
        assert all(a.epoch < b.epoch and a.start_offset < b.start_offset for a, b in zip(entries, entries[1:]))

    @invariant()
    def same_answers(self):
        leo = max([s for _, s in self.model], default=0) + 7
        for epoch in range(-2, 11):
            assert self.cache.end_offset_for(epoch, leo) == model_end_offset_for(self.model, epoch, leo), epoch


EpochCacheWalk.TestCase.settings = settings(max_examples=150, stateful_step_count=30)
test_epoch_cache_against_list_model = EpochCacheWalk.TestCase


def test_file_is_kafkas_format(tmp_path):
    cache = LeaderEpochCache(tmp_path / LEADER_EPOCH_CHECKPOINT)
    assert not cache.loaded and cache.entries == []
    for epoch, start in [(0, 0), (2, 1500), (5, 1730)]:
        assert cache.assign(epoch, start)
    assert not cache.assign(5, 1800)  # the latest epoch again, later: nothing to record
    assert not (tmp_path / LEADER_EPOCH_CHECKPOINT).exists()  # assign leaves the file to the flush
    cache.write_if_changed()
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n3\n0 0\n2 1500\n5 1730\n"
    assert not (tmp_path / (LEADER_EPOCH_CHECKPOINT + ".tmp")).exists()
    again = LeaderEpochCache(tmp_path / LEADER_EPOCH_CHECKPOINT)
    assert again.loaded and again.entries == [EpochEntry(0, 0), EpochEntry(2, 1500), EpochEntry(5, 1730)]


def test_kafka_end_offset_cases(tmp_path):
    cache = LeaderEpochCache(tmp_path / LEADER_EPOCH_CHECKPOINT)
    assert cache.end_offset_for(3, 100) == (-1, -1)  # empty
    for epoch, start in [(2, 10), (4, 30), (7, 60)]:
        cache.assign(epoch, start)
    assert cache.end_offset_for(7, 100) == (7, 100)  # latest: the log end
    assert cache.end_offset_for(4, 100) == (4, 60)
    assert cache.end_offset_for(5, 100) == (4, 60)  # epoch 5 wrote nothing: epoch 4's end
    assert cache.end_offset_for(1, 100) == (1, 10)  # below every cached epoch (Kafka >= 2.1)
    assert cache.end_offset_for(8, 100) == (-1, -1)  # above the latest
    assert cache.end_offset_for(-1, 100) == (-1, -1)


@pytest.mark.parametrize("text", ["", "1\n1\n0 0\n", "0\n2\n0 0\n", "0\n2\n3 10\n2 20\n", "0\n1\nx y\n"])
def test_malformed_file_reads_as_absent(tmp_path, text):
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_text(text)
    cache = LeaderEpochCache(path)
    assert not cache.loaded and cache.entries == []


def test_a_file_that_cannot_be_written_is_tried_again(tmp_path):
    cache = LeaderEpochCache(tmp_path / "gone" / LEADER_EPOCH_CHECKPOINT)
    assert cache.assign(1, 0)
    with pytest.raises(WriteRefused):
        cache.write_if_changed()
    assert cache.entries == [EpochEntry(1, 0)]
    (tmp_path / "gone").mkdir()
    cache.write_if_changed()
    assert (tmp_path / "gone" / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n1 0\n"


def test_an_empty_cache_writes_no_file(tmp_path):
    """A partition that never took a batch: its flush and close write nothing (no fsyncs)."""
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    cache = LeaderEpochCache(path)
    cache.write_if_changed()
    assert not path.exists()
    assert LeaderEpochCache(path).entries == []
    cache.assign(1, 0)
    cache.write_if_changed()
    assert path.read_text() == "0\n1\n1 0\n"
    emptied = LeaderEpochCache(path)
    emptied.replace([])  # a full truncation: the file must say so
    assert path.read_text() == "0\n0\n"


def test_truncation_writes_at_once(tmp_path):
    cache = LeaderEpochCache(tmp_path / LEADER_EPOCH_CHECKPOINT)
    cache.assign(1, 0)
    cache.assign(3, 10)
    assert cache.truncate_from_end(10)
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n1 0\n"


def test_offset_checkpoint_round_trip(tmp_path):
    path = tmp_path / "replication-offset-checkpoint"
    assert read_checkpoint(path) == {}
    write_checkpoint(path, {("b-t", 1): 7, ("a.x", 0): 12})
    assert path.read_text() == "0\n2\na.x 0 12\nb-t 1 7\n"
    assert read_checkpoint(path) == {("a.x", 0): 12, ("b-t", 1): 7}
    path.write_text("0\n3\na 0 1\n")  # fewer entries than it says
    assert read_checkpoint(path) == {}
