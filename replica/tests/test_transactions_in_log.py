"""Transactions in a partition's log, on both engines: random interleavings of several producers'
transactional batches, COMMIT / ABORT markers and non-transactional batches, checked against a
simple model of Kafka's rules (the last stable offset, the aborted transactions a read_committed
fetch is told about, the records a read_committed consumer gets), through the high watermark
moving behind the appends and a reopen of the log from disk, clean or after a crash (the
producer state rebuilt by replay, the aborted-transaction index from the log's own)."""

from __future__ import annotations

import shutil
import tempfile
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from replica.partition import Partition
from replica.partition_state import PartitionState
from replica.producer_state import CoordinatorFenced, ProducerFenced
from replica.readable_partition import FetchIsolation
from segment.kafka.store import SegmentLogStore
from segment.rocket.store import RocketLogStore
from segment.tests.log_configs import log_config
from wire.batch_builder import build_batch
from wire.control_batch import ABORT, control_type
from wire.record_batch import iter_batches, parse_header
from wire.records import iter_records

# A small commitlog store: the crash case copies the files, and the default key index is a
# 400 MB sparse file that a copy writes out whole (minutes per example under load)
STORES = [SegmentLogStore, partial(RocketLogStore, commitlog_file_size=1 << 20, index_slots=64, index_entries=1024)]
PRODUCERS = (1000, 1001, 1002)


def _open(store, lead_alone=False) -> Partition:
    """A broker leading alone (the HW follows its appends), else the leader of replicas 1 and 2."""
    p = Partition("t", 0, store.open_partition("t", 0, log_config()), 1, log_config(), min_insync_replicas=1,
                  lag_time_max_ms=30_000, lead_alone=lead_alone)
    if not lead_alone:
        p.make_leader(PartitionState(1, 1, 0, (1, 2), (1, 2)))
    return p


class Model:
    """Offsets counted one by one: each batch here holds one record, each marker takes one offset."""

    def __init__(self) -> None:
        self.end = 0
        self.open: dict[int, int] = {}
        self.completed: list[tuple[int, int, int, bool]] = []  # producer, first, marker offset, aborted
        self.sequence = {pid: 0 for pid in PRODUCERS}

    def lso(self, hw: int) -> int:
        unstable = [*self.open.values(), *(first for _p, first, last, _a in self.completed if last >= hw)]
        return min([hw, *unstable])

    def aborted_overlapping(self, start: int, upper: int) -> list[tuple[int, int]]:
        return [(pid, first) for pid, first, last, aborted in self.completed
                if aborted and last >= start and first < upper]


def _apply(p: Partition, model: Model, step) -> None:
    kind, pid = step
    if kind == "data" or kind == "plain":
        transactional = kind == "data"
        batch = build_batch([(b"k", b"v")], 1000, (pid, 0, model.sequence[pid]), transactional)
        p.append_as_leader(batch, parse_header(batch), acks=1)
        model.sequence[pid] += 1
        if transactional:
            model.open.setdefault(pid, model.end)
    else:
        p.append_txn_marker(pid, 0, 0, commit=kind == "commit")
        model.completed.append((pid, model.open.pop(pid, model.end), model.end, kind == "abort"))
    model.end += 1


steps = st.lists(st.tuples(st.sampled_from(["data", "data", "plain", "commit", "abort"]),
                           st.sampled_from(PRODUCERS)), max_size=40)


@pytest.mark.parametrize("store_cls", STORES, ids=["segment", "commitlog"])
@settings(max_examples=40)
@given(steps=steps, hw_fractions=st.lists(st.floats(0, 1), min_size=1, max_size=5))
def test_lso_and_aborted_ranges_follow_the_model(store_cls, steps, hw_fractions):
    with tempfile.TemporaryDirectory() as tmp:
        store = store_cls(Path(tmp))
        p = _open(store)
        model = Model()
        for step in steps:
            _apply(p, model, step)
        p.publish()
        hw = 0
        for fraction in sorted(hw_fractions):  # the follower catches up in steps; the HW never goes back
            hw = max(hw, int(fraction * model.end))
            p.follower_fetched(2, hw)
            assert p.high_watermark == hw
            assert p.last_stable_offset == model.lso(hw)
        for start in range(0, model.end + 1, 3):
            got = [(t.producer_id, t.first_offset) for t in p.aborted_transactions(start, model.end)]
            assert got == model.aborted_overlapping(start, model.end)
        store.close()
        # reopened from disk: what the replay rebuilds is what was known (the HW starts at the log end
        # for a broker leading alone)
        store = store_cls(Path(tmp))
        p = _open(store, lead_alone=True)
        assert p.last_stable_offset == model.lso(model.end)
        got = [(t.producer_id, t.first_offset) for t in p.aborted_transactions(0, model.end)]
        assert got == model.aborted_overlapping(0, model.end)
        store.close()


def _read_committed(p: Partition) -> list[int]:
    """Offsets of the records a read_committed consumer gets, fetching as the Fetch handler answers
    (records below the LSO, the aborted transactions overlapping them) and skipping as Kafka's
    consumer does (an aborted producer's batches from its transaction's first offset to its ABORT)."""
    out, offset = [], p.log_start_offset
    while offset < p.last_stable_offset:
        data = b"".join(p.read_bytes(r) for r in p.read(offset, 1 << 20, FetchIsolation.TXN_COMMITTED))
        pending = sorted(p.aborted_transactions(offset, p.last_stable_offset), key=lambda t: t.first_offset)
        aborted: set[int] = set()
        for pos, header in iter_batches(data):
            while pending and pending[0].first_offset <= header.last_offset:
                aborted.add(pending.pop(0).producer_id)
            batch = data[pos:pos + header.size]
            if header.is_control:
                if control_type(batch) == ABORT:
                    aborted.discard(header.producer_id)
            elif not (header.is_transactional and header.producer_id in aborted):
                out += [r.offset for r in iter_records(batch)]
            offset = header.last_offset + 1
    return out


@pytest.mark.parametrize("store_cls", STORES, ids=["segment", "commitlog"])
@settings(max_examples=30)
@given(steps=steps, crash=st.booleans())
def test_read_committed_reads_what_the_model_committed_also_after_a_reopen(store_cls, steps, crash):
    with tempfile.TemporaryDirectory() as tmp:
        store = store_cls(Path(tmp) / "data")
        p = _open(store, lead_alone=True)
        model = Model()
        kinds: list[tuple[str, int]] = []  # what each offset holds
        for step in steps:
            _apply(p, model, step)
            kinds.append(step)
            store.commit_writes()
        p.publish()
        ended = {}  # offset of a transactional record -> whether its transaction committed
        for offset, (kind, pid) in enumerate(kinds):
            if kind in ("commit", "abort"):
                for o, (k, q) in enumerate(kinds[:offset]):
                    if k == "data" and q == pid and o not in ended:
                        ended[o] = kind == "commit"
        lso = model.lso(model.end)

        def expected() -> list[int]:
            return [o for o, (kind, _pid) in enumerate(kinds)
                    if o < lso and (kind == "plain" or (kind == "data" and ended.get(o)))]

        assert p.last_stable_offset == lso
        assert _read_committed(p) == expected()
        if crash:  # a copy of the open store's files, as a kill -9 leaves them
            shutil.copytree(Path(tmp) / "data", Path(tmp) / "crashed")
            store.close()
            store = store_cls(Path(tmp) / "crashed")
        else:
            store.close()
            store = store_cls(Path(tmp) / "data")
        p = _open(store, lead_alone=True)
        assert p.last_stable_offset == lso
        assert _read_committed(p) == expected()
        store.close()


@pytest.fixture(params=STORES, ids=["segment", "commitlog"])
def store(request, tmp_path):
    s = request.param(tmp_path)
    yield s
    s.close()


def test_a_marker_takes_an_offset_and_reads_back_as_a_control_batch(store):
    p = _open(store, lead_alone=True)
    batch = build_batch([(b"k", b"v")] * 2, 1000, (7, 0, 0), transactional=True)
    p.append_as_leader(batch, parse_header(batch), acks=1)
    assert p.last_stable_offset == 0  # the open transaction holds read_committed at its first offset
    info = p.append_txn_marker(7, 0, 5, commit=False)
    assert info.first_offset == 2 and p.log_end_offset == 3
    p.publish()
    assert p.last_stable_offset == 3
    data = b"".join(p.read_bytes(r) for r in p.read(2, 1 << 20, FetchIsolation.LOG_END))
    (_, header), = list(iter_batches(data))
    assert header.is_control and header.producer_id == 7 and control_type(data) == ABORT
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in p.aborted_transactions(0, 3)] == [(7, 0, 2)]


def test_markers_from_an_older_producer_or_coordinator_epoch_are_fenced(store):
    p = _open(store, lead_alone=True)
    batch = build_batch([(b"k", b"v")], 1000, (7, 3, 0), transactional=True)
    p.append_as_leader(batch, parse_header(batch), acks=1)
    with pytest.raises(ProducerFenced):
        p.append_txn_marker(7, 2, 0, commit=True)
    p.append_txn_marker(7, 3, 4, commit=True)
    with pytest.raises(CoordinatorFenced):
        p.append_txn_marker(7, 3, 3, commit=True)
    assert p.log_end_offset == 2  # the fenced markers wrote nothing


def test_a_producer_keeps_its_sequence_across_markers(store):
    p = _open(store, lead_alone=True)
    for seq in (0, 1):
        batch = build_batch([(b"k", b"v")], 1000, (7, 0, seq), transactional=True)
        p.append_as_leader(batch, parse_header(batch), acks=1)
        p.append_txn_marker(7, 0, 0, commit=True)
    assert p.log_end_offset == 4


def test_retention_drops_aborted_transactions_below_the_log_start(store):
    p = _open(store, lead_alone=True)
    for pid in (7, 8):
        batch = build_batch([(b"k", b"v")], 1000, (pid, 0, 0), transactional=True)
        p.append_as_leader(batch, parse_header(batch), acks=1)
        p.append_txn_marker(pid, 0, 0, commit=False)
        p.publish()
    p.delete_records_before(2)
    assert [t.producer_id for t in p.aborted_transactions(0, 4)] == [8]


@pytest.mark.parametrize("store_cls", STORES, ids=["segment", "commitlog"])
def test_a_follower_copying_the_leaders_batches_knows_the_same_transactions(store_cls, tmp_path):
    leader_store, follower_store = store_cls(tmp_path / "leader"), store_cls(tmp_path / "follower")
    leader = _open(leader_store, lead_alone=True)
    model = Model()
    for step in [("data", 1000), ("data", 1001), ("abort", 1000), ("data", 1002), ("commit", 1001),
                 ("data", 1000), ("abort", 1000)]:
        _apply(leader, model, step)
    leader.publish()
    follower = Partition("t", 0, follower_store.open_partition("t", 0, log_config()), 2, log_config(),
                         min_insync_replicas=1, lag_time_max_ms=30_000, lead_alone=False)
    data = b"".join(leader.read_bytes(r) for r in leader.read(0, 1 << 20, FetchIsolation.LOG_END))
    for pos, header in iter_batches(data):
        follower.append_as_follower(data[pos:pos + header.size])
    follower.update_follower_high_watermark(leader.high_watermark)
    assert follower.last_stable_offset == leader.last_stable_offset == model.lso(model.end) == 3
    assert follower.aborted_transactions(0, 99) == leader.aborted_transactions(0, 99)
    assert [(t.producer_id, t.first_offset) for t in follower.aborted_transactions(0, 99)] == [(1000, 0), (1000, 5)]
    # a divergent tail cut off: the second abort goes, producer 1000's transaction at 5 is open again
    follower.truncate_to(6)
    assert [(t.producer_id, t.first_offset) for t in follower.aborted_transactions(0, 99)] == [(1000, 0)]
    assert follower.last_stable_offset == 3  # held by 1002 at 3 (and 1000 at 5) on the follower too
    leader_store.close()
    follower_store.close()
