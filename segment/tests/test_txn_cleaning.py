"""Compaction of logs holding transactions, both layouts' cleaners (segment/compaction/txn_cleaning.py).

An oracle over random logs of plain and transactional writes to a few keys, COMMIT and ABORT
markers and a transaction left open at the end: after each round, a read_committed consumer
(Kafka's algorithm: the aborted transactions the log's index names, the markers that end them)
reads the same table as before, the transactions open in the log are the same, no index
entry lacks its marker and an ABORT marker after a batch of its own that is left is indexed. Then the markers' retention: a marker outlives its transaction's batches by one round.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from log_engines import Engine

from segment.kafka import log_cleaner as segment_cleaner
from segment.rocket import log_cleaner as commitlog_cleaner
from segment.tests.log_configs import log_config
from segment.txn_replay import OpenTransactions
from wire.batch_builder import build_batch
from wire.control_batch import ABORT, build_control_batch, control_type, is_marker
from wire.record_batch import iter_batches
from wire.records import iter_records

CFG = log_config(segment_bytes=400, cleanup_policy="compact", min_cleanable_dirty_ratio=0.0,
                 delete_retention_ms=1_000)
CLEANERS = {"segment": segment_cleaner, "commitlog": commitlog_cleaner}
WRITTEN_AT = 5_000
NOT_EXPIRED, EXPIRED = WRITTEN_AT + 500, WRITTEN_AT + 10_000


class Log:
    def __init__(self, engine: Engine) -> None:
        self.engine, self.plog = engine, engine.log(CFG)
        self.open = OpenTransactions()

    def write(self, kind: str, pid: int = 7, key: bytes = b"k", value: bytes | None = b"v") -> int:
        if kind in ("plain", "data"):
            batch = build_batch([(key, value)], WRITTEN_AT, (pid, 0, 0) if kind == "data" else None,
                                transactional=kind == "data")
            info = self.plog.append(batch, 0, WRITTEN_AT)
            if kind == "data":
                self.open.begin(pid, info.first_offset)
        else:
            info = self.plog.append(build_control_batch(pid, 0, 0, kind == "commit", WRITTEN_AT), 0, WRITTEN_AT)
            _first, txn = self.open.end(pid, info.first_offset, kind == "abort")
            if txn is not None:
                self.plog.append_aborted_txn(txn)
        self.engine.noise()
        self.engine.request_done()
        return info.first_offset

    @property
    def stable(self) -> int:
        return min([*self.open.first_offsets(), self.plog.log_end_offset])

    def clean(self, now: int) -> None:
        cleaner = CLEANERS[self.engine.kind]
        cleaner.clean(self.plog, 0, now, 1 << 20, last_stable_offset=self.stable)

    def batches(self) -> list[bytes]:
        plog = self.plog
        data = b"".join(plog.read_bytes(r) for r in plog.read(plog.log_start_offset, 1 << 30, plog.log_end_offset))
        return [bytes(data[pos : pos + h.size]) for pos, h in iter_batches(data)]

    def read_committed(self) -> dict[bytes, bytes]:
        """The table a read_committed consumer builds up to the last stable offset."""
        stable = self.stable
        pending = sorted(self.plog.aborted_txns(self.plog.log_start_offset, stable), key=lambda t: t.first_offset)
        aborted: set[int] = set()
        view: dict[bytes, bytes] = {}
        for batch in self.batches():
            header = next(iter_batches(batch))[1]
            if header.last_offset >= stable:
                break
            while pending and pending[0].first_offset <= header.last_offset:
                aborted.add(pending.pop(0).producer_id)
            if header.is_control:
                if is_marker(header) and header.record_count and control_type(batch) == ABORT:
                    aborted.discard(header.producer_id)
                continue
            if header.is_transactional and header.producer_id in aborted:
                continue
            for record in iter_records(batch):
                if record.value is None:
                    view.pop(record.key, None)
                else:
                    view[record.key] = record.value
        return view

    def open_in_log(self) -> dict[int, int]:
        """The transactions the producer state rebuilt from this log would find open."""
        txns = OpenTransactions()
        for batch in self.batches():
            header = next(iter_batches(batch))[1]
            if is_marker(header):
                txns.end(header.producer_id, header.base_offset, False)
            elif header.is_transactional and not header.is_control:
                txns.begin(header.producer_id, header.base_offset)
        return dict(zip(txns._first.keys(), txns.first_offsets()))

    def check_index_matches_markers(self) -> None:
        """No index entry lacks its ABORT marker, and an ABORT marker after a batch of its
        transaction that is left is indexed (else read_committed consumers would read it)."""
        entries = self.plog.aborted_txns(self.plog.log_start_offset, self.plog.log_end_offset)
        assert entries == self.plog.aborted_txns(0, 1 << 62)
        indexed = {t.last_offset for t in entries}
        has_batch: set[int] = set()  # producers with a batch left since their last marker
        aborts = set()
        for batch in self.batches():
            h = next(iter_batches(batch))[1]
            if is_marker(h):
                abort = h.record_count > 0 and control_type(batch) == ABORT
                if abort:
                    aborts.add(h.base_offset)
                if abort and h.producer_id in has_batch:
                    assert h.base_offset in indexed, f"the ABORT at {h.base_offset} after a batch of its own"
                has_batch.discard(h.producer_id)
            elif h.is_transactional and not h.is_control:
                has_batch.add(h.producer_id)
        assert indexed <= aborts, f"index entries without their marker: {sorted(indexed - aborts)}"


@pytest.fixture(params=list(CLEANERS))
def log(request, tmp_path):
    engine = Engine(request.param, tmp_path)
    yield Log(engine)
    engine.store.close()


def _fill(log: Log, n: int = 12) -> None:
    """Plain batches of their own keys, so what precedes them lies in closed segments."""
    for i in range(n):
        log.write("plain", key=b"fill%d" % i)


def test_aborted_records_go_and_never_supersede_an_older_value(log):
    log.write("plain", key=b"b", value=b"orig")
    log.write("data", 7, key=b"b", value=b"aborted")
    log.write("data", 8, key=b"a", value=b"committed")
    log.write("abort", 7)
    log.write("commit", 8)
    _fill(log)
    before = log.read_committed()
    assert before[b"b"] == b"orig" and before[b"a"] == b"committed"
    log.clean(NOT_EXPIRED)
    assert log.read_committed() == before
    values = [r.value for b in log.batches() for r in iter_records(b) if not next(iter_batches(b))[1].is_control]
    assert b"aborted" not in values and b"orig" in values
    # both markers stay (batches of theirs were met), the ABORT with its entry
    assert [t.producer_id for t in log.plog.aborted_txns(0, log.plog.log_end_offset)] == [7]
    log.check_index_matches_markers()
    # past delete.retention.ms: the ABORT goes (no batch of 7 is left; emptied, as the last batch of
    # its producer, which producer state keeps), the COMMIT stays with its batch; a round runs
    # when there is something dirty
    _fill(log)
    log.clean(EXPIRED)
    markers = [next(iter_batches(b))[1] for b in log.batches() if is_marker(next(iter_batches(b))[1])]
    assert [(h.producer_id, h.record_count) for h in markers] == [(7, 0), (8, 1)]
    assert log.plog.aborted_txns(0, log.plog.log_end_offset) == []
    assert log.read_committed() == before and log.open_in_log() == {}


def test_a_round_stops_at_the_last_stable_offset(log):
    log.write("plain", key=b"c", value=b"keep")
    log.write("data", 7, key=b"c", value=b"open")  # open: it may yet abort
    _fill(log)
    log.clean(NOT_EXPIRED)
    values = [r.value for b in log.batches() for r in iter_records(b)]
    assert b"keep" in values and b"open" in values
    log.write("abort", 7)
    _fill(log)
    log.clean(NOT_EXPIRED)
    assert log.read_committed()[b"c"] == b"keep"


steps = st.lists(st.one_of(
    st.tuples(st.sampled_from(["plain", "data", "data"]), st.sampled_from([7, 8, 9]), st.sampled_from([b"a", b"b"]),
              st.sampled_from([b"1", b"2", None])),
    st.tuples(st.sampled_from(["commit", "abort"]), st.sampled_from([7, 8, 9]), st.just(b""), st.just(b""))),
    min_size=1, max_size=30)


@pytest.mark.parametrize("kind", list(CLEANERS))
@settings(max_examples=30)
@given(steps=steps, nows=st.lists(st.sampled_from([NOT_EXPIRED, EXPIRED]), min_size=1, max_size=3))
# a marker with nothing open, then an open transaction beginning with a tombstone in the
# segment that holds the last stable offset: the segment layout rewrites it whole
@example(steps=[("commit", 7, b"", b""), ("data", 7, b"a", None), ("data", 7, b"a", b"1")], nows=[EXPIRED])
def test_cleaning_keeps_what_read_committed_consumers_read(tmp_path_factory, kind, steps, nows):
    engine = Engine(kind, tmp_path_factory.mktemp(kind))
    try:
        log = Log(engine)
        for kind_, pid, key, value in steps:
            log.write(kind_, pid, key, value)
        _fill(log, 6)
        before, open_before = log.read_committed(), log.open_in_log()
        for now in nows:
            log.clean(now)
            assert log.read_committed() == before
            assert log.open_in_log() == open_before
            log.check_index_matches_markers()
        log.plog = engine.reopen(clean=False, config=CFG)
        assert log.read_committed() == before
    finally:
        engine.store.close()
