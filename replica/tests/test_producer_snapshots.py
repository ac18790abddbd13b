"""Producer-state snapshots on both engines: a reopened partition replays only the batch headers
past its newest usable snapshot, and ends with the state a replay of the whole log gives, through
every change of the log under a snapshot (a crash's lost tail, follower truncation, the log start
moving, a full truncation, a torn or corrupt file, deletion, a log-dir move)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from replica.future_replica import FutureReplica
from replica.partition import Partition
from replica.partition_state import PartitionState
from replica.producer_snapshot import PendingSnapshot, ProducerSnapshots, Snapshot, encode, snapshot_name, write_round
from replica.producer_state import ProducerStateTable
from segment.fsync_count import fsyncs
from segment.kafka.store import SegmentLogStore
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config
from wire.batch_builder import build_batch
from wire.record_batch import parse_header

ROCKET = dict(commitlog_file_size=1 << 16, queue_entries_per_file=64, index_slots=64, index_entries=400)
STORES = {"segment": SegmentLogStore, "commitlog": lambda path: RocketLogStore(path, **ROCKET)}
CFG = log_config(segment_bytes=2048, index_interval_bytes=256)
PRODUCERS = (1000, 1001, 1002)


class Broker:
    """One store under `root/data`, reopened cleanly or after a crash (a copy of its files taken
    while it is open, the writes of the last request in them)."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind, self.root, self.path, self.crashes = kind, root, root / "data", 0
        self.store = STORES[kind](self.path)
        self.p = self._partition()
        self.sequences = dict.fromkeys(PRODUCERS, 0)

    def _partition(self) -> Partition:
        return Partition("t", 0, self.store.open_partition("t", 0, CFG), 1, CFG, min_insync_replicas=1,
                         lag_time_max_ms=30_000)

    def produce(self, pid: int, transactional: bool = False) -> None:
        batch = build_batch([(b"k", b"v")], 1000, (pid, 0, self.sequences[pid]), transactional)
        self.p.append_as_leader(batch, parse_header(batch), acks=1)
        self.sequences[pid] += 1
        self.store.commit_writes()
        self.p.publish()

    def marker(self, pid: int, commit: bool) -> None:
        self.p.append_txn_marker(pid, 0, 0, commit)
        self.store.commit_writes()

    def snapshot(self) -> None:
        write = self.p.replica_log.take_producer_snapshot()
        if write is not None:
            write()

    def reopen(self, clean: bool = True) -> Partition:
        if clean:
            self.snapshot()  # as the broker's shutdown does
            self.store.close()
        else:
            self.store.commit_writes()
            crashed = self.root / f"crash{self.crashes}"
            self.crashes += 1
            shutil.copytree(self.path, crashed)
            self.store.close()
            self.path = crashed
        self.store = STORES[self.kind](self.path)
        self.p = self._partition()
        return self.p

    def snapshot_offsets(self) -> list[int]:
        return ProducerSnapshots(self.p._log.state_dir).offsets()

    def replayed_whole(self):
        """What a replay of the whole log (no snapshot) knows."""
        return ProducerStateTable.load(self.p._log, ProducerSnapshots(self.root / "no-snapshots")).active()


@pytest.fixture(params=list(STORES))
def broker(request, tmp_path):
    b = Broker(request.param, tmp_path)
    yield b
    b.store.close()


def test_a_new_partition_lists_no_directory_for_snapshots(broker, monkeypatch):
    """A partition whose engine has just made its directory has no snapshot to find: three
    listings of it per partition, on the event loop, stalled it 100-200 ms at a time while
    20,000 partitions were created."""
    plog = broker.store.install_partition(broker.store.prepare_partition("t", 1, CFG))
    listed = []
    real = os.scandir, os.listdir
    monkeypatch.setattr(os, "scandir", lambda path=".": listed.append(path) or real[0](path))
    monkeypatch.setattr(os, "listdir", lambda path=".": listed.append(path) or real[1](path))
    p = Partition("t", 1, plog, 1, CFG, min_insync_replicas=1, lag_time_max_ms=30_000)
    monkeypatch.undo()
    assert listed == []
    batch = build_batch([(b"k", b"v")], 1000, (PRODUCERS[0], 0, 0), False)
    p.append_as_leader(batch, parse_header(batch), acks=1)
    broker.store.commit_writes()
    p.replica_log.take_producer_snapshot()()
    assert ProducerSnapshots(plog.state_dir).offsets() == [1]


def test_a_clean_restart_replays_no_batch(broker):
    for i in range(60):
        broker.produce(PRODUCERS[i % 3])
    before = broker.p.producers.active()
    p = broker.reopen()
    assert p.producers.snapshot_offset == 60
    assert p.producers.replayed == 0
    assert p.producers.active() == before == broker.replayed_whole()


def test_an_empty_partition_writes_no_snapshot(broker):
    """A shutdown of a broker holding thousands of new, empty partitions wrote and fsynced a
    snapshot for each (2,000 outlasted a 20 s SIGTERM bound): a replay of an empty log reads
    nothing, so there is nothing to save."""
    assert broker.p.replica_log.take_producer_snapshot() is None
    broker.reopen()
    assert broker.snapshot_offsets() == []
    broker.produce(PRODUCERS[0])
    broker.snapshot()
    assert broker.snapshot_offsets() == [1]


def test_after_a_crash_only_the_tail_past_the_snapshot_is_replayed(broker):
    for i in range(40):
        broker.produce(PRODUCERS[i % 3])
    broker.snapshot()
    for i in range(7):
        broker.produce(PRODUCERS[i % 3], transactional=i == 6)
    before = broker.p.producers.active()
    p = broker.reopen(clean=False)
    assert (p.producers.snapshot_offset, p.producers.replayed) == (40, 7)
    assert p.producers.active() == before == broker.replayed_whole()
    assert p.last_stable_offset == 46  # the open transaction's first offset, found in the tail


def test_a_duplicate_is_still_recognised_from_a_snapshot(broker):
    for _ in range(3):
        broker.produce(1000)
    p = broker.reopen()
    resent = build_batch([(b"k", b"v")], 1000, (1000, 0, 2))
    info, duplicate = p.append_as_leader(resent, parse_header(resent), acks=1)
    assert duplicate and info.first_offset == 2


def test_open_transactions_and_coordinator_epochs_survive_in_the_snapshot(broker):
    broker.produce(1000, transactional=True)
    broker.produce(1001, transactional=True)
    broker.p.append_txn_marker(1001, 0, 7, commit=False)
    broker.produce(1002)
    before = broker.p.producers.active()
    p = broker.reopen()
    assert p.producers.replayed == 0
    assert p.producers.active() == before == broker.replayed_whole()
    assert p.last_stable_offset == 0  # producer 1000's transaction is still open


def test_a_torn_or_corrupt_newest_snapshot_falls_back_to_the_older_one(broker):
    for i in range(20):
        broker.produce(PRODUCERS[i % 3])
    broker.snapshot()
    for i in range(5):
        broker.produce(PRODUCERS[i % 3])
    broker.snapshot()
    broker.store.close()
    newest = broker.p._log.state_dir / snapshot_name(25)
    data = bytearray(newest.read_bytes())
    data[-3] ^= 0xFF
    newest.write_bytes(bytes(data))
    broker.store = STORES[broker.kind](broker.path)
    p = broker.p = broker._partition()
    assert (p.producers.snapshot_offset, p.producers.replayed) == (20, 5)
    assert p.producers.active() == broker.replayed_whole()
    # a torn one (cut short) and the older one gone: the whole log is replayed
    broker.store.close()
    (p._log.state_dir / snapshot_name(20)).unlink()
    newest.write_bytes(newest.read_bytes()[:30])
    broker.store = STORES[broker.kind](broker.path)
    p = broker.p = broker._partition()
    assert (p.producers.snapshot_offset, p.producers.replayed) == (-1, 25)


def test_a_snapshot_past_the_log_end_is_deleted_at_open(broker):
    for i in range(10):
        broker.produce(PRODUCERS[i % 3])
    broker.snapshot()
    # a snapshot describing offsets the crashed log no longer holds
    (broker.p._log.state_dir / snapshot_name(500)).write_bytes(
        (broker.p._log.state_dir / snapshot_name(10)).read_bytes())
    p = broker.reopen(clean=False)
    assert broker.snapshot_offsets() == [10]
    assert p.producers.snapshot_offset == 10


def _leader_of(p: Partition, epoch: int) -> None:
    p.make_leader(PartitionState(1, epoch, 0, (1,), (1,)))


def test_follower_truncation_drops_the_snapshots_past_the_cut(broker):
    for i in range(30):
        broker.produce(PRODUCERS[i % 3])
    broker.snapshot()
    for i in range(10):
        broker.produce(PRODUCERS[i % 3])
    broker.snapshot()
    broker.p.make_follower(PartitionState(2, 1, 0, (1, 2), (1, 2)))
    broker.p.truncate_to(35)
    assert broker.snapshot_offsets() == [30]
    assert (broker.p.producers.snapshot_offset, broker.p.producers.replayed) == (30, 5)
    assert broker.p.producers.active() == broker.replayed_whole()
    broker.p.truncate_to(12)  # below every snapshot: the whole log as cut
    assert broker.snapshot_offsets() == []
    assert broker.p.producers.replayed == 12
    assert broker.p.producers.active() == broker.replayed_whole()


def test_a_write_taken_before_a_truncation_is_dropped(broker):
    for i in range(20):
        broker.produce(PRODUCERS[i % 3])
    stale = broker.p.replica_log.take_producer_snapshot()
    broker.p.make_follower(PartitionState(2, 1, 0, (1, 2), (1, 2)))
    broker.p.truncate_to(8)
    stale()
    assert broker.snapshot_offsets() == []


def test_a_full_truncation_deletes_every_snapshot(broker):
    for i in range(20):
        broker.produce(PRODUCERS[i % 3])
    broker.snapshot()
    broker.p.make_follower(PartitionState(2, 1, 0, (1, 2), (1, 2)))
    broker.p.truncate_fully_and_start_at(100)
    assert broker.snapshot_offsets() == []
    assert broker.p.producers.active() == []
    p = broker.reopen()
    assert p.producers.active() == [] and p.log_start_offset == 100


def test_the_log_start_moving_past_a_snapshot_forgets_producers_it_deleted(broker):
    broker.produce(1000)
    broker.produce(1001)
    broker.snapshot()
    for _ in range(4):
        broker.produce(1002)
    broker.p.delete_records_before(3)
    p = broker.reopen(clean=False)
    assert p.producers.snapshot_offset == 2
    assert [a.producer_id for a in p.producers.active()] == [1002]
    assert p.producers.active() == broker.replayed_whole()


def test_a_deleted_partition_takes_its_snapshots_with_it(broker):
    for i in range(10):
        broker.produce(PRODUCERS[i % 3])
    broker.snapshot()
    state_dir = broker.p._log.state_dir
    broker.store.delete_partition("t", 0)
    assert not state_dir.exists()
    broker.p = broker._partition()
    assert broker.p.producers.active() == [] and broker.p.producers.snapshot_offset == -1


def test_a_moved_partition_snapshots_into_its_new_directory(broker, tmp_path):
    for i in range(12):
        broker.produce(PRODUCERS[i % 3])
    broker.snapshot()
    other_kind = "commitlog" if broker.kind == "segment" else "segment"
    target = STORES[other_kind](tmp_path / "target")
    future_log = target.open_partition("t", 0, CFG)
    (future_log.state_dir / snapshot_name(5)).write_bytes(b"left by an earlier log")
    future = FutureReplica(future_log, other_kind)
    broker.p.replica_log.mirror_into(future)
    broker.p.replica_log.swap_in(future)
    assert ProducerSnapshots(future_log.state_dir).offsets() == []
    before = broker.p.producers.active()
    broker.snapshot()
    target.close()
    reopened = STORES[other_kind](tmp_path / "target")
    p = Partition("t", 0, reopened.open_partition("t", 0, CFG), 1, CFG, min_insync_replicas=1,
                  lag_time_max_ms=30_000)
    assert (p.producers.snapshot_offset, p.producers.replayed) == (12, 0)
    assert p.producers.active() == before
    reopened.close()


@pytest.mark.parametrize("kind", list(STORES))
@settings(max_examples=25, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(["data", "txn", "commit", "abort", "snapshot", "cut"]),
                                st.sampled_from(PRODUCERS), st.floats(0, 1)), max_size=40),
       clean=st.booleans())
def test_snapshot_and_tail_equal_a_whole_replay(kind, steps, clean, tmp_path_factory):
    b = Broker(kind, tmp_path_factory.mktemp("walk"))
    try:
        for action, pid, fraction in steps:
            if action in ("data", "txn"):
                b.produce(pid, transactional=action == "txn")
            elif action in ("commit", "abort"):
                b.marker(pid, commit=action == "commit")
            elif action == "snapshot":
                b.snapshot()
            else:  # a follower cutting a divergent tail, then leading again
                b.p.make_follower(PartitionState(2, 1, 0, (1, 2), (1, 2)))
                b.p.truncate_to(int(fraction * b.p.log_end_offset))
                _leader_of(b.p, 2)
                b.sequences = {a.producer_id: a.last_sequence + 1 for a in b.p.producers.active()} | \
                    {pid: 0 for pid in PRODUCERS if pid not in {a.producer_id for a in b.p.producers.active()}}
            assert b.p.producers.active() == b.replayed_whole()
        p = b.reopen(clean)
        assert p.producers.active() == b.replayed_whole()
    finally:
        b.store.close()


def test_a_round_of_snapshots_is_made_durable_by_one_sync(tmp_path):
    """write_round: 50 partitions' snapshots cost one syncfs, not 50 fsyncs, and each is in place
    and readable after it; a stale one (its partition truncated meanwhile) is dropped."""
    dirs = [tmp_path / f"p{i}" for i in range(50)]
    stores = []
    for d in dirs:
        d.mkdir()
        stores.append(ProducerSnapshots(d))
    pending = [PendingSnapshot(f"t-{i}", s, Snapshot(100 + i, (), ()), s.generation) for i, s in enumerate(stores)]
    stores[7].truncate_after(-1)  # a truncation after the copy: that write is stale
    before = fsyncs().get("snapshot", 0)
    write_round(pending)
    assert fsyncs().get("snapshot", 0) - before == 1
    assert [s.offsets() for s in stores] == [[] if i == 7 else [100 + i] for i in range(50)]
    assert stores[3].latest_at_or_below(1000).offset == 103
    assert not any(p.name.endswith(".tmp") for d in dirs for p in d.iterdir())


def test_a_partition_lists_its_directory_once_not_at_every_round(tmp_path, monkeypatch):
    """Opening reads the directory once (it was three times), and the rounds that write and
    trim snapshots after never list it: the kept offsets match a fresh listing throughout."""
    import os

    listings = []
    for name in ("listdir", "scandir"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda path=".", _real=real: listings.append(path) or _real(path))
    d = tmp_path / "p"
    d.mkdir()
    for offset in (10, 20, 30):  # left by the last run, and a write a crash interrupted
        (d / snapshot_name(offset)).write_bytes(encode(Snapshot(offset, (), ())))
    (d / (snapshot_name(40) + ".tmp")).write_bytes(b"torn")
    snaps = ProducerSnapshots(d)
    assert snaps.latest_at_or_below(25).offset == 20  # the one past the log end goes
    assert len(listings) == 1
    for offset in (50, 60, 70):
        write_round([PendingSnapshot("t-0", snaps, Snapshot(offset, (), ()), snaps.generation)])
    snaps.truncate_after(65)
    assert len(listings) == 1
    monkeypatch.undo()
    # the two newest kept after each write (60, 70), then the one past 65 truncated
    assert snaps.offsets() == ProducerSnapshots(d).offsets() == [60]
    assert sorted(p.name for p in d.iterdir()) == [snapshot_name(60)]
