"""truncate_fully_and_start_at over both engines: a follower whose end is below the leader's
log start empties its log and starts it there (Kafka's truncateFullyAndStartAt), and a restart,
clean or crashed (log_engines.py), finds it the same way. The contract suite's state walk
(test_log_contract.py) mixes it with every other change of the log."""

from __future__ import annotations

import pytest
from log_engines import ENGINES, Engine, epochs_on_disk, lead, stored
from segment.tests.segment_batches import make_batch

from segment.log import OffsetMismatch, OffsetOutOfRange


@pytest.fixture(params=ENGINES)
def engine(request, tmp_path):
    e = Engine(request.param, tmp_path)
    yield e
    e.store.close()


def replicated_batch(base: int, epoch: int, records: int = 3) -> bytearray:
    """A batch as a leader stored it at `base` in `epoch` (the CRC covers neither field)."""
    batch = make_batch(records, value_size=20)
    batch[0:8] = base.to_bytes(8, "big")
    batch[12:16] = epoch.to_bytes(4, "big")
    return batch


@pytest.mark.parametrize("writer", ["follower", "leader"])
@pytest.mark.parametrize("restart", [None, "clean", "crash"])
def test_truncate_fully_starts_the_log_over(engine, restart, writer):
    """A follower whose end (10) is below the leader's log start (25) empties its log there."""
    plog = engine.log()
    lead(engine, plog, [(1, 2)] * 3 + [(2, 2)] * 2)
    assert (plog.log_end_offset, plog.epochs.entries) == (10, [(1, 0), (2, 6)])
    plog.truncate_fully_and_start_at(25)
    engine.request_done()
    if restart is not None:
        plog = engine.reopen(clean=restart == "clean")
    assert (plog.log_start_offset, plog.log_end_offset, plog.size_in_bytes) == (25, 25, 0)
    assert plog.read(25, 1 << 20, 25) == [] and plog.read(25, 1 << 20, 1 << 40) == []
    for outside in (0, 9, 10, 24, 26):
        with pytest.raises(OffsetOutOfRange):
            plog.read(outside, 1 << 20, 1 << 40)
    assert plog.epochs.entries == [] and epochs_on_disk(engine) == []
    assert plog.latest_epoch() == -1 and plog.end_offset_for(2) == (-1, -1)
    assert list(plog.batch_headers(0)) == [] and plog.max_timestamp() is None
    with pytest.raises(OffsetMismatch):
        plog.append_as_follower(replicated_batch(10, 2))  # the old end is no end any more
    if writer == "follower":
        batch = replicated_batch(25, 2)  # the same epoch as before: the emptied cache takes it
        info = plog.append_as_follower(bytearray(batch))
        assert (info.first_offset, info.last_offset, info.log_start_offset) == (25, 27, 25)
        epoch = 2
    else:
        batch = make_batch(3, value_size=20)
        info = plog.append(batch, 7, 5_000)
        assert (info.first_offset, info.last_offset, info.log_start_offset) == (25, 27, 25)
        epoch = 7
    engine.noise()
    engine.request_done()
    assert stored(plog) == [bytes(batch)]  # byte for byte, as the leader stored it
    assert plog.epochs.entries == [(epoch, 25)] and epochs_on_disk(engine) == [(epoch, 25)]
    assert plog.end_offset_for(epoch) == (epoch, 28)
    plog = engine.reopen(clean=False)
    assert (plog.log_start_offset, plog.log_end_offset) == (25, 28)
    assert stored(plog) == [bytes(batch)] and plog.epochs.entries == [(epoch, 25)]
    if engine.kind == "segment":  # the old segments went, as truncate_to retires them
        assert [p.name for p in sorted((engine.path / "t-0").glob("*.log"))] == [f"{25:020d}.log"]
    else:
        assert [e.base_offset for e in plog.queue.entries_from(0)] == [25]


@pytest.mark.parametrize("clean", [True, False])
def test_truncate_fully_may_start_below_the_log_start(engine, clean):
    """The fetcher starts an empty log over at a batch that holds its start (DeleteRecords put
    it inside the leader's batch): a start lowered so is kept across a restart as well."""
    plog = engine.log()
    lead(engine, plog, [(1, 4), (1, 3)])
    plog.delete_records_before(7)
    engine.store.flush()  # the log start 7 is checkpointed
    plog.truncate_fully_and_start_at(5)
    engine.request_done()
    plog = engine.reopen(clean=clean)
    assert (plog.log_start_offset, plog.log_end_offset) == (5, 5)
    batch = replicated_batch(5, 1)
    plog.append_as_follower(bytearray(batch))
    engine.request_done()
    plog = engine.reopen(clean=False)
    assert (plog.log_start_offset, plog.log_end_offset) == (5, 8)
    assert stored(plog) == [bytes(batch)] and plog.epochs.entries == [(1, 5)]
