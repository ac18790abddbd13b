"""The records every client round-trips, and the one comparison all client modules share.

Each client module produces `round_trip_records()` with its own producer, reads them back with
its own consumer, turns what it read into `Consumed` tuples and calls `assert_round_trip`. The
set covers what brokers get wrong: empty versus null values, null keys, arbitrary bytes (every
byte value, NULs), duplicate and empty-valued and null-valued headers, non-ASCII header keys,
explicit timestamps that go backwards inside one batch, a value big enough to span many TCP
reads, several records per partition in one batch, and keyed records placed by the client's
partitioner.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass

PARTITIONS = 3
CREATE_TIME = 0
BASE_TS = 1_700_000_000_000  # 2023-11-14, far from "now" so a broker stamping its own time shows


@dataclass(frozen=True)
class Rec:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int = BASE_TS
    partition: int | None = None  # None: the client's partitioner picks from the key


@dataclass(frozen=True)
class Consumed:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int
    timestamp_type: int = CREATE_TIME


@dataclass
class Sent:
    rec: Rec
    partition: int
    offset: int


def round_trip_records(null_header_values: bool = True, null_key_and_value: bool = True) -> list[Rec]:
    """The flags drop what a client's own API refuses to send (not what a broker refuses)."""
    rnd = random.Random(20240601)
    big = rnd.randbytes(300_000)
    every_byte = bytes(range(256))
    null_header: tuple = (("nul", None),) if null_header_values else ()
    recs = [
        Rec(b"alpha", b"one", (("h1", b"v1"), ("h2", b"")) + null_header, BASE_TS, 0),
        Rec(None, b"", (), BASE_TS + 1, 0),
        Rec(b"", b"empty key", (("dup", b"a"), ("dup", b"b"), ("dup", b"a")), BASE_TS + 2, 0),
        Rec(b"tombstone", None, (), BASE_TS + 3, 1),
        Rec(every_byte, every_byte * 3 + b"\x00", (("bin", bytes([0, 255, 128, 0])),), BASE_TS + 4, 1),
        # An older timestamp after newer ones in the same batch: max timestamp != last timestamp.
        Rec(b"old", b"from 2001", (), 1_000_000_000_000, 1),
        Rec("ключ".encode(), "héllo wörld ✓ 日本".encode(), (("ünïcode-kéy", "välue".encode()),), BASE_TS + 6, 2),
        Rec(b"big", big, (("size", b"300000"),), BASE_TS + 7, 2),
    ]
    if null_key_and_value:
        recs.append(Rec(None, None, (), BASE_TS + 8, 2))
    for i in range(8):  # each key twice: the partitioner must put both on one partition
        for j in range(2):
            recs.append(Rec(f"user-{i}".encode(), f"event-{i}-{j}".encode(), (("seq", bytes([j])),),
                            BASE_TS + 100 + 2 * i + j, None))
    return recs


def normalize_headers(headers) -> tuple[tuple[str, bytes | None], ...]:
    out = []
    for k, v in headers or ():
        out.append((k.decode() if isinstance(k, bytes) else k, None if v is None else bytes(v)))
    return tuple(out)


def assert_round_trip(sent: list[Sent], consumed: list[Consumed], num_partitions: int = PARTITIONS,
                      check_timestamps: bool = True) -> None:
    """Everything acked is read back exactly once, at its acked offset, byte for byte."""
    problems: list[str] = []
    by_pos: dict[tuple[int, int], list[Consumed]] = defaultdict(list)
    for c in consumed:
        by_pos[(c.partition, c.offset)].append(c)
    for pos, cs in by_pos.items():
        if len(cs) > 1:
            problems.append(f"{pos} consumed {len(cs)} times")

    per_partition_sent: dict[int, list[int]] = defaultdict(list)
    for s in sent:
        if s.rec.partition is not None and s.partition != s.rec.partition:
            problems.append(f"record for partition {s.rec.partition} acked on partition {s.partition}")
        if not 0 <= s.partition < num_partitions:
            problems.append(f"acked partition {s.partition} out of range")
        per_partition_sent[s.partition].append(s.offset)

    for p, offsets in sorted(per_partition_sent.items()):
        if sorted(offsets) != list(range(len(offsets))):
            problems.append(f"partition {p}: acked offsets {sorted(offsets)} are not 0..{len(offsets) - 1}")
    for p in range(num_partitions):
        got = sorted(o for (pp, o) in by_pos if pp == p)
        want = sorted(per_partition_sent.get(p, []))
        if got != want:
            problems.append(f"partition {p}: consumed offsets {got} != acked offsets {want}")

    keyed: dict[bytes, set[int]] = defaultdict(set)
    for s in sent:
        if s.rec.partition is None:
            keyed[s.rec.key].add(s.partition)
        cs = by_pos.get((s.partition, s.offset))
        if not cs:
            continue
        c = cs[0]
        r = s.rec
        where = f"p{s.partition}@{s.offset}"
        if c.key != r.key:
            problems.append(f"{where}: key {_short(c.key)} != {_short(r.key)}")
        if c.value != r.value:
            problems.append(f"{where}: value {_short(c.value)} != {_short(r.value)}")
        if normalize_headers(c.headers) != r.headers:
            problems.append(f"{where}: headers {normalize_headers(c.headers)} != {r.headers}")
        if check_timestamps and c.timestamp != r.timestamp:
            problems.append(f"{where}: timestamp {c.timestamp} != {r.timestamp}")
        if c.timestamp_type != CREATE_TIME:
            problems.append(f"{where}: timestamp type {c.timestamp_type} != CreateTime")
    for key, parts in keyed.items():
        if len(parts) != 1:
            problems.append(f"key {key!r} landed on partitions {sorted(parts)}")

    assert not problems, f"{len(problems)} round-trip problem(s):\n  " + "\n  ".join(problems[:40])


def assert_values_in_order(consumed: list[Consumed], expected_values: list[bytes], partition: int = 0) -> None:
    """For single-partition runs: offsets 0..n-1 in order, values exactly as produced."""
    got = [(c.offset, c.value) for c in consumed if c.partition == partition]
    want = list(enumerate(expected_values))
    if got != want:
        first_bad = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
        raise AssertionError(
            f"partition {partition}: read {len(got)} records, expected {len(want)}; first difference at "
            f"index {first_bad}: got {got[first_bad:first_bad + 3]!r:.300} want {want[first_bad:first_bad + 3]!r:.300}")


def _short(b: bytes | None) -> str:
    if b is None:
        return "None"
    return repr(b[:40]) + (f"...({len(b)} bytes)" if len(b) > 40 else "")
