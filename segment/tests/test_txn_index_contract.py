"""The aborted-transaction index of PartitionLog, run over both engines.

A log is written as the partition writes one (replica/partition.py): batches, markers, and for
each ABORT marker the entry its open transactions give (segment/txn_replay.py), handed to
`append_aborted_txn`. What `aborted_txns` answers is checked against that list of entries
filtered by the contract (marker at or after the start and the log start, first offset before
the upper bound), after appends, truncation, DeleteRecords, retention, clean and unclean
reopens, a torn marker, and index files that lost what was written after the last checkpoint.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from log_engines import CFG, ENGINES, Engine, crash_tearing

from segment.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex
from segment.txn_replay import OpenTransactions
from segment.open_files import OpenFiles
from wire.batch_builder import build_batch
from wire.control_batch import build_control_batch

PRODUCERS = (7, 8, 9)


class Writer:
    """Appends as a partition does and keeps the entries it indexed."""

    def __init__(self, engine: Engine, plog) -> None:
        self.engine, self.plog = engine, plog
        self.open = OpenTransactions()
        self.entries: list[AbortedTxn] = []

    def step(self, kind: str, pid: int, request_done: bool = True) -> int:
        if kind in ("data", "plain"):
            batch = build_batch([(b"k", b"v" * 40)] * 2, 1_000, (pid, 0, 0), transactional=kind == "data")
            info = self.plog.append(batch, 0, 1_000)
            if kind == "data":
                self.open.begin(pid, info.first_offset)
        else:
            info = self.plog.append(build_control_batch(pid, 0, 0, kind == "commit", 1_000), 0, 1_000)
            _first, txn = self.open.end(pid, info.first_offset, kind == "abort")
            if txn is not None:
                self.plog.append_aborted_txn(txn)
                self.entries.append(txn)
        self.engine.noise()
        if request_done:
            self.engine.request_done()
        return info.first_offset

    def run(self, steps) -> list[int]:
        return [self.step(kind, pid) for kind, pid in steps]

    def expected(self, start: int, upper: int) -> list[AbortedTxn]:
        start = max(start, self.plog.log_start_offset)
        return [t for t in self.entries if t.last_offset >= start and t.first_offset < upper]


def check(writer: Writer, plog) -> None:
    end = plog.log_end_offset
    for start in range(plog.log_start_offset, end + 1):
        for upper in (start + 1, start + 5, end):
            assert plog.aborted_txns(start, upper) == writer.expected(start, upper), (start, upper)


@pytest.fixture(params=ENGINES)
def engine(request, tmp_path):
    e = Engine(request.param, tmp_path)
    yield e
    e.store.close()


steps = st.lists(st.tuples(st.sampled_from(["data", "data", "plain", "commit", "abort", "abort"]),
                           st.sampled_from(PRODUCERS)), max_size=40)


@pytest.mark.parametrize("kind", ENGINES)
@settings(max_examples=25)
@given(steps=steps, clean=st.booleans())
def test_entries_read_back_by_the_contract_also_after_a_reopen(tmp_path_factory, kind, steps, clean):
    engine = Engine(kind, tmp_path_factory.mktemp(kind))
    try:
        writer = Writer(engine, engine.log())
        writer.run(steps)
        check(writer, writer.plog)
        writer.plog = engine.reopen(clean=clean)
        check(writer, writer.plog)
    finally:
        engine.store.close()


def test_a_read_stops_at_the_first_entry_whose_stable_offset_passes_its_upper_bound(tmp_path):
    index = TransactionIndex(tmp_path / "x.txnindex", OpenFiles(4))
    assert not (tmp_path / "x.txnindex").exists()  # created by its first entry
    for txn in [AbortedTxn(1, 0, 4, 2), AbortedTxn(2, 2, 9, 10), AbortedTxn(3, 1, 12, 13)]:
        index.append(txn)
    # the entry ending at 9 says every later marker ends a transaction begun at 10 or after
    assert index.collect(3, 10) == ([AbortedTxn(1, 0, 4, 2), AbortedTxn(2, 2, 9, 10)], True)
    assert index.collect(5, 20) == ([AbortedTxn(2, 2, 9, 10), AbortedTxn(3, 1, 12, 13)], False)
    with pytest.raises(ValueError):
        index.append(AbortedTxn(4, 11, 12, 13))  # not after the last marker
    assert (tmp_path / "x.txnindex").stat().st_size == 3 * ENTRY_SIZE


def test_truncation_cuts_the_entries_of_the_markers_it_removes(engine):
    writer = Writer(engine, engine.log())
    offsets = writer.run([("data", 7), ("data", 8), ("abort", 7), ("data", 9), ("abort", 8),
                          ("plain", 7), ("abort", 9), ("data", 7)])
    plog = writer.plog
    plog.truncate_to(offsets[6])  # the ABORT of 9 goes
    writer.entries = writer.entries[:2]
    check(writer, plog)
    writer.open = OpenTransactions()
    writer.open.begin(9, offsets[3])
    writer.step("abort", 9)  # its marker again, at the new log end
    check(writer, plog)
    check(writer, engine.reopen(clean=False))


def test_delete_records_and_retention_drop_entries_below_the_log_start(engine):
    writer = Writer(engine, engine.log())
    offsets = writer.run([("data", p) for p in PRODUCERS] + [("abort", p) for p in PRODUCERS] * 1
                         + [("plain", 7)] * 20 + [("data", 7), ("abort", 7)])
    plog = writer.plog
    plog.delete_records_before(offsets[4] + 1)  # past the aborts of 7 and 8
    assert [t.producer_id for t in plog.aborted_txns(0, plog.log_end_offset)] == [9, 7]
    check(writer, plog)
    plog.update_config(replace(CFG, retention_bytes=1))  # everything but the last batch goes
    plog.enforce_retention(10_000)
    check(writer, plog)
    assert plog.aborted_txns(plog.log_start_offset, plog.log_end_offset) == writer.entries[-1:]
    check(writer, engine.reopen(clean=True))
    if engine.kind == "segment":  # deleted with their segments
        assert len(list((engine.path / "t-0").glob("*.txnindex"))) == 1


def test_truncate_fully_empties_the_index(engine):
    writer = Writer(engine, engine.log())
    writer.run([("data", 7), ("abort", 7)])
    writer.plog.truncate_fully_and_start_at(100)
    writer.entries = []
    writer.open = OpenTransactions()
    assert writer.plog.aborted_txns(100, 200) == []
    writer.run([("data", 8), ("abort", 8)])
    check(writer, writer.plog)
    check(writer, engine.reopen(clean=False))


def test_a_torn_marker_takes_its_entry_with_it(engine):
    writer = Writer(engine, engine.log())
    offsets = writer.run([("data", 7), ("data", 8), ("abort", 7), ("plain", 9), ("abort", 8)])
    plog = crash_tearing(engine, writer.plog, offsets[4])
    writer.entries = writer.entries[:1]
    assert plog.log_end_offset == offsets[4]
    check(writer, plog)


def test_a_crash_before_a_request_is_written_keeps_no_entry_without_its_marker(engine):
    """The commitlog layout writes a request's units when it is done (commit_writes), the entry
    at once: a crash between loses the marker, and recovery drops its entry."""
    writer = Writer(engine, engine.log())
    writer.run([("data", 7), ("data", 8), ("abort", 7)])
    _checkpoint(engine)  # recovery replays nothing of the partition
    writer.step("abort", 8, request_done=False)
    crashed = engine.root / "unwritten"
    shutil.copytree(engine.path, crashed)  # no commit_writes: what the request holds is lost
    engine.store.close()
    engine.path = crashed
    engine.store = engine._open()
    plog = engine.log()
    writer.entries = [t for t in writer.entries if t.last_offset < plog.log_end_offset]
    assert len(writer.entries) == (2 if engine.kind == "segment" else 1)
    check(writer, plog)


def _txn_files(root: Path) -> dict[Path, bytes]:
    return {p.relative_to(root): p.read_bytes() for p in root.rglob("*.txnindex")}


def _checkpoint(engine: Engine) -> None:
    """What the broker's periodic flush makes durable: the segment layout's recovery points,
    the commitlog layout's full checkpoint."""
    if engine.kind == "segment":
        engine.store.flush()
    else:
        engine.store.checkpoint()


def test_entries_lost_after_the_checkpoint_are_rebuilt_from_the_log(engine):
    """A crash of the machine may keep the log's batches (fsynced by a flush) but lose index
    entries written after the last checkpoint: recovery indexes them again, the first
    offsets of transactions begun before the checkpoint included."""
    writer = Writer(engine, engine.log())
    writer.run([("data", 7), ("data", 8), ("abort", 7), ("plain", 9)] * 3 + [("data", 9)])
    _checkpoint(engine)
    kept = _txn_files(engine.path)
    writer.run([("abort", 8), ("data", 7), ("commit", 9), ("abort", 7), ("plain", 8)] * 2)
    writer.plog.flush()
    engine.store.commit_writes()
    crashed = engine.root / "lost-entries"
    shutil.copytree(engine.path, crashed)
    engine.store.close()
    for path in crashed.rglob("*.txnindex"):
        rel = path.relative_to(crashed)
        if rel in kept:
            path.write_bytes(kept[rel])
        else:
            path.unlink()
    engine.path = crashed
    engine.store = engine._open()
    plog = engine.log()
    assert plog.aborted_txns(0, plog.log_end_offset) == writer.entries
    check(writer, plog)
