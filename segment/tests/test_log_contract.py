"""The follower-facing contract of PartitionLog, run over both engines.

Each test runs on a segment-engine log and on a commitlog-engine log (small files, so segments
roll and commitlog files turn over); another partition writes between every step, so in the
commitlog a partition's batches are never adjacent. Crashes are copies of the open store's
directory (log_engines.py).
"""

from __future__ import annotations

import errno
import os
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from log_engines import (
    CFG, ENGINES, Engine, crash_tearing, epochs_on_disk, file_size_limit, first_of_each_epoch, lead, stored,
)
from segment.tests.leader_epoch_model import model_end_offset_for
from segment.tests.segment_batches import make_batch

from segment.leader_epoch_cache import EpochEntry
from segment.log import LogOffline, OffsetMismatch, WriteRefused
from segment.rocket import unit_format as uf
from wire.record_batch import InvalidBatch, assign_offsets, parse_header


@pytest.fixture(params=ENGINES)
def engine(request, tmp_path):
    e = Engine(request.param, tmp_path)
    yield e
    e.store.close()


# ----- leader appends -------------------------------------------------------------------


def test_leader_appends_record_each_new_epoch(engine):
    plog = engine.log()
    bases = lead(engine, plog, [(0, 3), (0, 2), (2, 4), (2, 1), (5, 2)])
    assert bases == [0, 3, 5, 9, 10]
    assert plog.epochs.entries == [(0, 0), (2, 5), (5, 10)]
    plog.flush()  # the file follows the cache at the flush (leader_epoch_cache.py)
    assert epochs_on_disk(engine, flushed=False) == [(0, 0), (2, 5), (5, 10)]
    assert [parse_header(b).partition_leader_epoch for b in stored(plog)] == [0, 0, 2, 2, 5]
    assert plog.latest_epoch() == 5
    assert plog.end_offset_for(5) == (5, 12)
    assert plog.end_offset_for(0) == (0, 5)
    assert plog.end_offset_for(3) == (2, 10)  # epoch 3 and 4 wrote nothing here
    assert plog.end_offset_for(6) == (-1, -1)


def test_epochs_not_yet_in_the_file_come_back_after_a_crash(engine):
    plog = engine.log()
    lead(engine, plog, [(0, 3)])
    plog.flush()
    lead(engine, plog, [(2, 4), (5, 2)])  # after the flush: only in the cache
    assert epochs_on_disk(engine, flushed=False) == [(0, 0)]
    plog = engine.reopen(clean=False)
    assert plog.epochs.entries == [(0, 0), (2, 3), (5, 7)]
    assert plog.end_offset_for(2) == (2, 7)


def test_epochs_the_write_paths_fsync_left_unwritten_come_back_after_a_crash(engine):
    plog = engine.log()
    lead(engine, plog, [(0, 3), (2, 4)])
    plog.flush_group.flush_logs([plog])  # the write path's group commit (replica/group_commit.py)
    plog = engine.reopen(clean=False)
    assert plog.epochs.entries == [(0, 0), (2, 3)]
    assert plog.end_offset_for(0) == (0, 3)


def test_empty_log_has_no_epoch(engine):
    plog = engine.log()
    assert plog.latest_epoch() == -1 and plog.end_offset_for(0) == (-1, -1)
    assert not engine.epoch_file.exists()
    plog = engine.reopen(clean=False)
    assert plog.latest_epoch() == -1 and not engine.epoch_file.exists()


# ----- follower appends -----------------------------------------------------------------


@pytest.mark.parametrize("leader_kind", ENGINES)
def test_follower_stores_the_leaders_bytes(engine, tmp_path, leader_kind):
    leader = Engine(leader_kind, tmp_path, "leader")
    llog = leader.log(replace(CFG, message_timestamp_type="LogAppendTime"))
    lead(leader, llog, [(1, 3), (1, 5), (4, 1), (4, 7), (4, 2), (9, 4)] + [(9, 3)] * 12)
    batches = stored(llog)
    follower = engine.log()
    for batch in batches:
        header = parse_header(batch)
        info = follower.append_as_follower(bytearray(batch))
        assert (info.first_offset, info.last_offset) == (header.base_offset, header.last_offset)
        assert info.log_append_time == header.max_timestamp  # the leader's LogAppendTime, kept
        engine.noise()
        engine.request_done()
    assert follower.log_end_offset == llog.log_end_offset == 58
    assert stored(follower) == batches  # byte for byte: offsets, epochs, timestamps, CRCs
    assert follower.epochs.entries == llog.epochs.entries == [(1, 0), (4, 8), (9, 18)]
    assert epochs_on_disk(engine) == [(1, 0), (4, 8), (9, 18)]
    for epoch in range(-1, 11):
        assert follower.end_offset_for(epoch) == llog.end_offset_for(epoch)
    follower = engine.reopen(clean=False)
    assert stored(follower) == batches and follower.epochs.entries == [(1, 0), (4, 8), (9, 18)]
    leader.store.close()


def test_follower_refuses_a_batch_that_does_not_continue_the_log(engine, tmp_path):
    leader = Engine(engine.kind, tmp_path, "leader")
    llog = leader.log()
    lead(leader, llog, [(1, 2), (2, 3), (2, 1), (3, 2)])
    batches = stored(llog)
    follower = engine.log()
    for batch in batches[:2]:
        follower.append_as_follower(bytearray(batch))
    engine.request_done()
    before = (stored(follower), follower.epochs.entries, epochs_on_disk(engine))

    refused = [
        (batches[0], OffsetMismatch),  # base 0, log end 5: already there
        (batches[3], OffsetMismatch),  # base 6: a gap
    ]
    corrupt = bytearray(batches[2])
    corrupt[-1] ^= 0x01  # inside the records: the CRC no longer matches
    refused.append((corrupt, InvalidBatch))
    refused.append((batches[2][:-3], InvalidBatch))  # torn: shorter than its batchLength
    refused.append((batches[2] + batches[3], InvalidBatch))  # two batches
    regressed = bytearray(batches[2])
    regressed[12:16] = (1).to_bytes(4, "big")  # epoch 1 after epoch 2: the log diverged
    refused.append((regressed, OffsetMismatch))
    for batch, error in refused:
        with pytest.raises(error):
            follower.append_as_follower(bytearray(batch))
        engine.request_done()
        assert (stored(follower), follower.epochs.entries, epochs_on_disk(engine)) == before
    assert follower.log_end_offset == 5

    follower = engine.reopen(clean=False)  # nothing of the refused batches comes back
    assert (stored(follower), follower.epochs.entries, epochs_on_disk(engine)) == before
    for batch in batches[2:]:
        follower.append_as_follower(bytearray(batch))
    engine.request_done()
    assert stored(follower) == batches
    leader.store.close()


def test_a_refused_write_forgets_the_epoch_it_brought(engine, tmp_path):
    leader = Engine(engine.kind, tmp_path, "leader")
    llog = leader.log()
    lead(leader, llog, [(1, 10)] * 5 + [(2, 10)])
    batches = stored(llog)
    follower = engine.log(replace(CFG, segment_bytes=1 << 20, segment_ms=1 << 62))  # one segment
    for batch in batches[:5]:
        follower.append_as_follower(bytearray(batch))
    engine.request_done()
    if engine.kind == "commitlog":  # fill the commitlog file so the next batch needs a new one
        cl = engine.store.commitlog
        unit = uf.FIXED_SIZE + len("t") + len(batches[5]) + uf.BLANK_MIN_SIZE
        while cl.files[-1].end - cl.write_pos >= unit:
            engine.noise()
        engine.request_done()
    before = (stored(follower), follower.epochs.entries, epochs_on_disk(engine))
    assert before[1] == [(1, 0)]
    with file_size_limit(1000), pytest.raises(WriteRefused):
        follower.append_as_follower(bytearray(batches[5]))  # epoch 2 starts here
    assert (stored(follower), follower.epochs.entries, epochs_on_disk(engine)) == before
    follower.append_as_follower(bytearray(batches[5]))
    engine.request_done()
    assert stored(follower) == batches and follower.epochs.entries == [(1, 0), (2, 50)]
    leader.store.close()



def test_an_offline_log_refuses_appends_before_touching_the_batch_or_the_epochs(engine, monkeypatch):
    """After a failed fsync a log serves nothing until a restart: a leader's and a follower's
    append are refused before the batch's header is rewritten or its epoch recorded."""
    plog = engine.log()
    lead(engine, plog, [(1, 2)])
    plog.flush()
    lead(engine, plog, [(1, 1)])  # unsynced bytes, the epoch file already right

    def eio(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "fsync", eio)
    with pytest.raises(LogOffline):
        plog.flush()
    monkeypatch.undo()
    leader_batch = make_batch(1)
    untouched = bytes(leader_batch)
    with pytest.raises(LogOffline):
        plog.append(leader_batch, 2, 5_000)
    assert leader_batch == untouched
    follower_batch = make_batch(1)
    assign_offsets(follower_batch, plog.log_end_offset, 3)
    with pytest.raises(LogOffline):
        plog.append_as_follower(follower_batch)
    assert plog.epochs.entries == [(1, 0)] and epochs_on_disk(engine, flushed=False) == [(1, 0)]
    assert plog.log_end_offset == 3

# ----- truncation -----------------------------------------------------------------------


def test_truncate_to_cuts_log_and_epoch_cache(engine):
    plog = engine.log()
    lead(engine, plog, [(1, 4), (1, 4), (3, 4), (3, 4), (6, 4), (6, 4)])
    assert plog.epochs.entries == [(1, 0), (3, 8), (6, 16)]
    plog.truncate_to(18)  # inside epoch 6's first batch: that whole batch goes
    assert plog.log_end_offset == 16
    assert plog.epochs.entries == [(1, 0), (3, 8)] and epochs_on_disk(engine) == [(1, 0), (3, 8)]
    assert plog.end_offset_for(3) == (3, 16) and plog.end_offset_for(6) == (-1, -1)
    plog.truncate_to(8)  # exactly where epoch 3 started
    assert plog.log_end_offset == 8 and plog.epochs.entries == [(1, 0)]
    batch = make_batch(2)
    batch[0:8] = (8).to_bytes(8, "big")
    batch[12:16] = (7).to_bytes(4, "big")  # a new leader's epoch-7 batch; CRC does not cover these
    plog.append_as_follower(batch)
    engine.request_done()
    assert plog.epochs.entries == [(1, 0), (7, 8)]
    plog = engine.reopen(clean=False)
    assert plog.log_end_offset == 10 and plog.epochs.entries == [(1, 0), (7, 8)]
    assert [parse_header(b).partition_leader_epoch for b in stored(plog)] == [1, 1, 7]
    plog.truncate_to(0)
    assert plog.log_end_offset == 0 and plog.epochs.entries == [] and epochs_on_disk(engine) == []


def test_truncating_a_log_that_holds_no_batch_survives_a_crash(engine):
    """Found by the walk below in the commitlog engine: a crash replayed the second of two cuts
    into a queue whose files no longer held the batches, skipped it, and ended the log at 1."""
    plog = engine.log()
    lead(engine, plog, [(0, 1)])
    plog = engine.reopen(clean=False)  # the commitlog engine checkpoints after a recovery
    lead(engine, plog, [(0, 1)])
    plog.truncate_to(1)
    plog.truncate_to(0)
    assert (plog.log_start_offset, plog.log_end_offset) == (0, 0)
    plog = engine.reopen(clean=False)
    assert (plog.log_start_offset, plog.log_end_offset) == (0, 0) and plog.epochs.entries == []
    lead(engine, plog, [(2, 1)])
    assert plog.epochs.entries == [(2, 0)]


def test_cutting_the_batch_that_holds_the_log_start_survives_a_crash(engine):
    """Found by the walk below in the commitlog engine: the lowered log start was not written,
    and the cut was replayed as "cut at 1" into a queue whose files no longer held batch 0..1."""
    plog = engine.log()
    lead(engine, plog, [(0, 2)])
    plog.delete_records_before(1)
    plog = engine.reopen(clean=False)
    lead(engine, plog, [(0, 1)])
    plog.truncate_to(1)  # batch 0..1 holds offset 1: it goes, and the log start with it
    assert (plog.log_start_offset, plog.log_end_offset) == (0, 0)
    plog = engine.reopen(clean=False)
    assert (plog.log_start_offset, plog.log_end_offset) == (0, 0) and plog.epochs.entries == []


# ----- recovery -------------------------------------------------------------------------


def test_torn_tail_takes_its_epochs_with_it(engine):
    plog = engine.log()
    bases = lead(engine, plog, [(1, 3), (1, 3), (2, 3), (2, 3), (4, 3), (4, 3)])
    assert plog.epochs.entries == [(1, 0), (2, 6), (4, 12)]
    plog = crash_tearing(engine, plog, bases[4])  # the first epoch-4 batch is torn, the second gone
    assert plog.log_end_offset == 12
    assert plog.epochs.entries == [(1, 0), (2, 6)] and epochs_on_disk(engine) == [(1, 0), (2, 6)]
    assert plog.end_offset_for(2) == (2, 12) and plog.end_offset_for(4) == (-1, -1)


@pytest.mark.parametrize("damage", ["missing", "garbage", "wrong epoch", "behind", "ahead"])
def test_a_cache_file_that_disagrees_is_rebuilt_from_the_batches(engine, damage):
    plog = engine.log()
    lead(engine, plog, [(2, 2), (2, 2), (5, 2), (8, 2), (8, 2)])
    truth = [(2, 0), (5, 4), (8, 6)]
    assert plog.epochs.entries == truth
    engine.store.close()
    path = engine.epoch_file
    path.write_text({
        "missing": "",
        "garbage": "0\n2\n2 0\n",
        "wrong epoch": "0\n3\n2 0\n6 4\n8 6\n",
        "behind": "0\n2\n2 0\n5 4\n",
        "ahead": "0\n4\n2 0\n5 4\n8 6\n9 10\n",  # trimmed at the log end, not rebuilt
    }[damage])
    if damage == "missing":
        path.unlink()
    engine.store = engine._open()
    plog = engine.log()
    assert plog.epochs.entries == truth and epochs_on_disk(engine) == truth


@settings(max_examples=100)
@given(
    kind=st.sampled_from(ENGINES),
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.sampled_from([0, 0, 0, 1, 3]), st.integers(1, 5)),
            st.tuples(st.just("truncate"), st.floats(0, 1)),
            st.tuples(st.just("delete"), st.floats(0, 1)),
            st.tuples(st.just("start over"), st.integers(-3, 6)),
            st.tuples(st.just("reopen"), st.booleans()),
        ),
        min_size=1,
        max_size=25,
    ),
)
def test_epoch_cache_follows_the_log_against_a_list_model(tmp_path_factory, kind, steps):
    """Appends, truncations, DeleteRecords, starting over (truncate_fully_and_start_at) and
    restarts (clean or crashed) against a model: the batches as a list of (base, count, epoch)
    and the cache as a list changed by filters."""
    engine = Engine(kind, tmp_path_factory.mktemp(kind))
    plog = engine.log()
    batches: list[tuple[int, int, int]] = []
    cache: list[tuple[int, int]] = []
    start, epoch = 0, 0
    for step in steps:
        end = batches[-1][0] + batches[-1][1] if batches else start
        if step[0] == "append":
            epoch += step[1]
            plog.append(make_batch(step[2], value_size=10), epoch, 5_000)
            engine.noise()
            engine.request_done()
            if not cache or epoch > cache[-1][0]:  # an entry an emptied log kept at its end gives way
                cache = [(e, s) for e, s in cache if s < end] + [(epoch, end)]
            batches.append((end, step[2], epoch))
        elif step[0] == "truncate":
            offset = start + round(step[1] * (end - start))
            plog.truncate_to(offset)
            engine.request_done()
            kept = [b for b in batches if b[0] + b[1] <= offset]  # the batch holding it goes too
            if len(kept) < len(batches):
                end = batches[len(kept)][0]
            batches = kept
            start = min(start, end)
            cache = [(e, s) for e, s in cache if s < end]
        elif step[0] == "start over":  # mostly past the end, as a follower behind the log start
            start = max(end + step[1], 0)
            plog.truncate_fully_and_start_at(start)
            engine.request_done()
            batches, cache = [], []
        elif step[0] == "delete":
            offset = start + round(step[1] * (end - start))
            plog.delete_records_before(offset)
            engine.request_done()
            if offset > start:
                start = offset
                covering = [(e, s) for e, s in cache if s <= offset]
                if covering:
                    cache = [(covering[-1][0], offset)] + [(e, s) for e, s in cache if s > offset]
        else:
            plog = engine.reopen(clean=step[1])
            cache = [(e, s) for e, s in cache if s < end]  # an emptied log forgets its epoch
            if plog.log_start_offset != start:
                # The segment engine checkpoints its log start with its next flush, so a crash
                # can lose a DeleteRecords, or a truncation that cut the batch holding the log
                # start; the commitlog engine writes it at once. The cache follows the log.
                assert not step[1] and kind == "segment"
                start = plog.log_start_offset
                cache = first_of_each_epoch([(b, e) for b, n, e in batches if b + n > start], start)
        end = batches[-1][0] + batches[-1][1] if batches else start
        assert (plog.log_start_offset, plog.log_end_offset) == (start, end), step
        assert [tuple(e) for e in plog.epochs.entries] == cache, step
        assert epochs_on_disk(engine) == cache
        for asked in range(-1, epoch + 2):
            assert plog.end_offset_for(asked) == model_end_offset_for(cache, asked, end), (step, asked)
    assert [parse_header(b).partition_leader_epoch for b in stored(plog)] == [
        e for base, n, e in batches if base + n > start
    ]
    engine.store.close()


# ----- the log start --------------------------------------------------------------------


def test_delete_records_moves_the_first_epoch(engine):
    plog = engine.log()
    lead(engine, plog, [(1, 5), (1, 5), (2, 5), (2, 5), (3, 5), (3, 5)])
    assert plog.epochs.entries == [(1, 0), (2, 10), (3, 20)]
    plog.delete_records_before(17)  # inside epoch 2's second batch
    assert plog.epochs.entries == [(2, 17), (3, 20)] and epochs_on_disk(engine) == [(2, 17), (3, 20)]
    assert plog.end_offset_for(1) == (1, 17)  # below every cached epoch: up to the log start
    assert plog.end_offset_for(2) == (2, 20)
    plog = engine.reopen(clean=True)
    assert plog.log_start_offset == 17 and plog.epochs.entries == [EpochEntry(2, 17), EpochEntry(3, 20)]
    plog.delete_records_before(24)
    plog = engine.reopen(clean=False)
    # The commitlog engine keeps its log start on DeleteRecords; the segment engine, like Kafka,
    # with its next checkpoint, so a crash brings it back: the cache follows either way.
    start = plog.log_start_offset
    assert start == 24 or (engine.kind == "segment" and start < 24)
    batches = [(parse_header(b).base_offset, parse_header(b).partition_leader_epoch) for b in stored(plog)]
    assert batches[0][0] <= start and plog.epochs.entries == first_of_each_epoch(batches, start)
    assert start < 24 or plog.epochs.entries == [(3, 24)]
    plog.delete_records_before(30)
    assert plog.epochs.entries == [(3, 30)]
    assert plog.end_offset_for(3) == (3, 30)
    plog = engine.reopen(clean=True)  # emptied: the epoch is forgotten, as Kafka does at load
    assert (plog.log_start_offset, plog.log_end_offset) == (30, 30) and plog.epochs.entries == []


def test_retention_moves_the_first_epoch(engine):
    plog = engine.log(replace(CFG, retention_bytes=600))
    lead(engine, plog, [(1, 4)] * 6 + [(2, 4)] * 6)
    assert plog.epochs.entries == [(1, 0), (2, 24)]
    plog.enforce_retention(10_000)
    start = plog.log_start_offset
    assert start > 24  # retention reached into epoch 2
    assert plog.epochs.entries == [(2, start)] and epochs_on_disk(engine) == [(2, start)]
