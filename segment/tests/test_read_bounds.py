"""PartitionLog.read's bounds over both engines: an oracle over random logs, and what one read
costs.

The oracle is the contract in words: whole batches from the one holding `offset`, none whose
last offset reaches `upper_bound`, no more than `max_bytes` of them unless the first alone is
larger (it goes whole, KIP-74); the segment engine answers all of that, the commitlog engine
may stop earlier (after MAX_BATCHES_PER_READ batches) but never answers nothing when the
oracle has something. Segments roll and the offset index is sparse, so reads start and end
between index entries and across segment files.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from log_engines import ENGINES, Engine
from segment.tests.segment_batches import make_batch

from segment.kafka.log_segment import LogSegment
from segment.rocket.partition_log import MAX_BATCHES_PER_READ
from segment.tests.log_configs import log_config
from wire.record_batch import iter_batches

CFG = log_config(segment_bytes=2048, index_interval_bytes=300)


def expected(batches: list[tuple[int, int, int]], offset: int, max_bytes: int, upper: int) -> list[int]:
    """Base offsets the contract allows at most, from (base, last, size) in log order."""
    out, total = [], 0
    for base, last, size in batches:
        if last < offset:
            continue
        if last >= upper or (out and total + size > max_bytes):
            break
        out.append(base)
        total += size
        if total >= max_bytes:
            break
    return out


def size_of(regions) -> int:
    return sum(len(r) if isinstance(r, bytes) else r.size for r in regions)  # small reads come as bytes


def read_bases(plog, offset: int, max_bytes: int, upper: int) -> list[int]:
    data = b"".join(plog.read_bytes(r) for r in plog.read(offset, max_bytes, upper))
    return [h.base_offset for _, h in iter_batches(data)]


@settings(max_examples=60)
@given(kind=st.sampled_from(ENGINES),
       sizes=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 200)), min_size=1, max_size=40),
       reads=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 3000), st.floats(0, 1.2)), min_size=1, max_size=10))
def test_read_returns_what_the_contract_says(tmp_path_factory, kind, sizes, reads):
    engine = Engine(kind, tmp_path_factory.mktemp(kind))
    try:
        plog = engine.log(CFG)
        batches = []
        for count, value_size in sizes:
            batch = make_batch(count, value_size=value_size)
            info = plog.append(batch, 0, 1_000)
            engine.noise()
            batches.append((info.first_offset, info.last_offset, len(batch)))
        engine.request_done()
        end = plog.log_end_offset
        for where, max_bytes, bound in reads:
            offset = min(int(where * end), end)
            upper = min(int(bound * end) + 1, end)
            want = expected(batches, offset, max_bytes, upper)
            got = read_bases(plog, offset, max_bytes, upper)
            if kind == "segment":
                assert got == want, (offset, max_bytes, upper)
            else:
                assert got == want[:MAX_BATCHES_PER_READ] and bool(got) == bool(want)
    finally:
        engine.store.close()


def test_a_segment_read_does_not_walk_every_batch(tmp_path, monkeypatch):
    """20,000 small batches in one segment: reading them all looks at a few headers near the
    end (found through the offset index), not 20,000."""
    engine = Engine("segment", tmp_path)
    try:
        plog = engine.log(log_config())
        batch = make_batch(1, value_size=60)
        for _ in range(20_000):
            plog.append(bytearray(batch), 0, 1_000)
        engine.request_done()
        seen = 0
        walk = LogSegment.headers_from

        def counting(self, position):
            nonlocal seen
            for item in walk(self, position):
                seen += 1
                yield item

        monkeypatch.setattr(LogSegment, "headers_from", counting)
        regions = plog.read(0, 2**31 - 1, plog.log_end_offset)
        assert size_of(regions) == 20_000 * len(batch)
        regions = plog.read(5, 100 * len(batch) + 7, plog.log_end_offset - 3)
        assert size_of(regions) == 100 * len(batch)
        assert seen < 200, f"{seen} batch headers read for two reads"
    finally:
        engine.store.close()


def test_a_commitlog_read_stops_after_max_batches(tmp_path):
    engine = Engine("commitlog", tmp_path)
    try:
        plog = engine.log(log_config())
        for _ in range(MAX_BATCHES_PER_READ + 50):
            plog.append(make_batch(1, value_size=10), 0, 1_000)
        engine.request_done()
        assert len(plog.read(0, 2**31 - 1, plog.log_end_offset)) == MAX_BATCHES_PER_READ
        assert len(plog.read(MAX_BATCHES_PER_READ, 2**31 - 1, plog.log_end_offset)) == 50
    finally:
        engine.store.close()
