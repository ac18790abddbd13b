"""After a crash the segment layout re-reads only what the recovery point does not cover: the
fsynced part of the segment holding it is trusted up to its last index entry below it, and the
scan validates from there on. Shown by damage: a flipped byte below the recovery point is not
read (the batch stays), one past it cuts the log there; the time index and the aborted-transaction
index come out as a full scan would make them."""

from __future__ import annotations

import shutil

from segment.tests.segment_batches import make_batch

from segment.kafka.store import SegmentLogStore
from segment.tests.log_configs import log_config
from segment.txn_index import AbortedTxn
from wire.batch_builder import build_batch
from wire.control_batch import build_control_batch

CFG = log_config(index_interval_bytes=256)


def _flip(path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0xFF]))


def _crash_copy(tmp_path, store) -> None:
    """The files as a kill -9 leaves them (no clean-shutdown marker), in tmp_path / "crash"."""
    shutil.copytree(tmp_path / "data", tmp_path / "crash")
    store.close()


def _payload_position(plog, offset: int) -> int:
    pos, header = plog.active.position_of(offset)
    return pos + header.size - 1  # the last record byte: covered by the CRC only


def test_a_crash_scans_from_the_recovery_point_not_the_segment_start(tmp_path):
    store = SegmentLogStore(tmp_path / "data")
    plog = store.open_partition("t", 0, CFG)
    for i in range(40):
        plog.append(make_batch(1, ts=1_000 + i), 0, 1_000)
    store.flush()  # the recovery point: 40, inside the one segment
    assert plog.recovery_point == 40 and len(plog.segments) == 1
    for i in range(10):
        plog.append(make_batch(1, ts=2_000 + i), 0, 1_000)
    store.commit_writes()
    below, past = _payload_position(plog, 5), _payload_position(plog, 45)
    _crash_copy(tmp_path, store)
    log_path = tmp_path / "crash" / "t-0" / "00000000000000000000.log"
    _flip(log_path, below)
    _flip(log_path, past)
    store = SegmentLogStore(tmp_path / "crash")
    plog = store.open_partition("t", 0, CFG)
    assert plog.log_end_offset == 45  # cut at the damaged batch past the recovery point only
    assert plog.max_timestamp() == (44, 2_004)
    assert plog.offset_for_timestamp(1_010) == (10, 1_010)
    assert plog.offset_for_timestamp(2_002) == (42, 2_002)
    store.close()


def test_aborted_transactions_on_both_sides_of_the_recovery_point(tmp_path):
    store = SegmentLogStore(tmp_path / "data")
    plog = store.open_partition("t", 0, CFG)

    def abort(pid: int) -> None:
        info = plog.append(build_control_batch(pid, 0, 0, False, 1_000), 0, 1_000)
        plog.append_aborted_txn(AbortedTxn(pid, info.first_offset - 1, info.first_offset, info.first_offset + 1))

    def txn_batch(pid: int) -> None:
        plog.append(build_batch([(b"k", b"v")], 1_000, (pid, 0, 0), transactional=True), 0, 1_000)

    for i in range(20):
        plog.append(make_batch(1), 0, 1_000)
    txn_batch(7)
    abort(7)  # offsets 20, 21
    for i in range(20):
        plog.append(make_batch(1), 0, 1_000)
    store.flush()  # recovery point 42
    txn_batch(8)
    abort(8)  # offsets 42, 43
    store.commit_writes()
    expected = plog.aborted_txns(0, 100)
    assert [t.producer_id for t in expected] == [7, 8]
    _crash_copy(tmp_path, store)
    store = SegmentLogStore(tmp_path / "crash")
    plog = store.open_partition("t", 0, CFG)
    assert plog.log_end_offset == 44
    assert plog.aborted_txns(0, 100) == expected
    store.close()


def test_opening_a_partition_lists_its_directory_once(tmp_path, monkeypatch):
    """A start opens every partition: its segments, leftovers of an interrupted write and
    orphan indexes come from one listing of the directory (they took six), with the same
    outcome (the leftovers gone, the log whole)."""
    import os

    store = SegmentLogStore(tmp_path / "data")
    log = store.open_partition("t", 0, CFG)
    for _ in range(3):
        log.append(make_batch(2), 0, 1_000)
    store.close()
    part = tmp_path / "data" / "t-0"
    (part / "leader-epoch-checkpoint.tmp").write_text("torn")
    (part / f"{99:020d}.index").write_bytes(b"")  # no log of its own
    listings = []
    for name in ("listdir", "scandir"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda path=".", _real=real, _name=name: listings.append(str(path)) or _real(path))
    store = SegmentLogStore(tmp_path / "data")
    log = store.open_partition("t", 0, CFG)
    monkeypatch.undo()
    assert [p for p in listings if p == str(part)] == [str(part)]
    assert not (part / "leader-epoch-checkpoint.tmp").exists() and not (part / f"{99:020d}.index").exists()
    assert log.log_end_offset == 6
    store.close()
