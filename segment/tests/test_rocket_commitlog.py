"""The rocket engine's commitlog: unit format, rollover with BLANK padding, scan and cut."""

from __future__ import annotations

import os
import random

import pytest
from segment.tests.segment_batches import make_batch

from segment.rocket import unit_format as uf
from segment.rocket.commitlog import CommitLog, UnitTooLarge, file_name
from wire.record_batch import parse_header

FILE = 1024


def unit(i: int, n: int = 2, topic: str = "t") -> bytearray:
    batch = make_batch(n, ts=1_000 + i)
    batch[0:8] = (i * 10).to_bytes(8, "big")
    return b"".join(uf.message_parts(topic, i % 3, i * 10, 5_000 + i, batch))


def test_unit_round_trip_and_damage():
    u = unit(7, topic="héllo")
    h = uf.parse_unit(u, 0, len(u))
    assert (h.topic, h.partition, h.base_offset, h.store_time, h.size) == ("héllo", 1, 70, 5_007, len(u))
    assert parse_header(u, h.header_size).base_offset == 70
    assert uf.parse_unit(u, 0, len(u) - 1) is None  # does not fit its room
    assert uf.parse_unit(u[:-1], 0, len(u)) is None  # short
    for i in range(len(u)):
        damaged = bytearray(u)
        damaged[i] ^= 0x01
        assert uf.parse_unit(damaged, 0, len(u)) is None, i
    t = uf.encode_truncate("t", 3, 42, 9)
    h = uf.parse_unit(t, 0, 100)
    assert (h.magic, h.base_offset, h.batch_size) == (uf.TRUNCATE, 42, 0)
    s = uf.encode_start_at("t", 3, 1 << 40, 9)
    h = uf.parse_unit(s, 0, 100)
    assert (h.magic, h.base_offset, h.batch_size) == (uf.START_AT, 1 << 40, 0)


def test_rollover_pads_with_blank_and_units_never_span(tmp_path):
    cl = CommitLog(tmp_path, FILE)
    rng = random.Random(1)
    placed = []
    for i in range(60):
        u = unit(i, rng.randint(1, 6))
        phys = cl.append(u)
        assert phys // FILE == (phys + len(u) - 1) // FILE  # inside one file
        assert (phys % FILE) + len(u) + uf.BLANK_MIN_SIZE <= FILE
        placed.append((phys, bytes(u)))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [file_name(k * FILE) for k in range(len(names))] and len(names) > 3
    assert all(os.path.getsize(tmp_path / n) == FILE for n in names)
    for phys, u in placed:
        assert cl.read(phys, len(u)) == u
    # every full file ends in a BLANK covering exactly the rest of it
    for k in range(len(names) - 1):
        last = max(p for p, u in placed if p // FILE == k)
        end = last + len(dict(placed)[last])
        size, magic = uf.PREFIX.unpack(cl.read(end, 8))
        assert (magic, end + size) == (uf.BLANK, (k + 1) * FILE)
    assert [(p, bytes(u)) for p, _h, u in cl.scan(0)] == placed
    assert cl.scan_end == cl.write_pos
    cl.close()
    again = CommitLog(tmp_path, FILE)
    assert [p for p, _h, _u in again.scan(FILE)] == [p for p, _ in placed if p >= FILE]
    again.truncate_at(again.scan_end)
    assert again.write_pos == cl.write_pos
    assert again.append(unit(99)) == cl.write_pos
    again.close()


def test_unit_exactly_filling_room_and_too_large(tmp_path):
    cl = CommitLog(tmp_path, FILE)
    u = unit(0)
    with pytest.raises(UnitTooLarge):
        CommitLog(tmp_path / "x", len(u) + uf.BLANK_MIN_SIZE - 1).append(u)
    small = CommitLog(tmp_path / "y", 2 * len(u) + uf.BLANK_MIN_SIZE)
    assert [small.append(unit(0)) for _ in range(3)] == [0, len(u), 2 * len(u) + uf.BLANK_MIN_SIZE]
    assert [p for p, _h, _u in small.scan(0)] == [0, len(u), 2 * len(u) + uf.BLANK_MIN_SIZE]
    cl.close()


def test_scan_stops_at_torn_unit_and_truncate_zeroes_the_rest(tmp_path):
    cl = CommitLog(tmp_path, FILE)
    phys = [cl.append(unit(i)) for i in range(20)]
    cl.close()
    target = phys[13]
    f = tmp_path / file_name(target - target % FILE)
    with open(f, "r+b") as fh:
        fh.seek(target % FILE + 40)
        fh.write(b"\xff")
    cl = CommitLog(tmp_path, FILE)
    assert [p for p, _h, _u in cl.scan(0)] == phys[:13]
    cl.truncate_at(cl.scan_end)
    assert cl.write_pos == target
    assert sorted(int(p.name) for p in tmp_path.iterdir())[-1] <= target
    assert cl.read(target, 64) == bytes(64)
    assert cl.append(unit(50)) == target
    cl.close()


def test_blank_at_file_end_without_next_file(tmp_path):
    cl = CommitLog(tmp_path, FILE)
    while cl.write_pos < FILE:
        cl.append(unit(1))
    cl.close()
    last = sorted(tmp_path.iterdir())[-1]
    last.unlink()  # crash between padding file 0 and creating file 1
    cl = CommitLog(tmp_path, FILE)
    list(cl.scan(0))
    assert cl.scan_end == FILE
    cl.truncate_at(FILE)
    assert cl.append(unit(2)) == FILE
    cl.close()


def test_pending_units_are_written_in_order_across_pwritev_limits(tmp_path):
    """Units split into [header, batch] parts wait in memory; more than one pwritev's worth
    (IOV_MAX parts) is written in several, and what a flush covers is only what was written."""
    from segment.rocket.commitlog import MAX_PENDING_PARTS

    cl = CommitLog(tmp_path, 1 << 24)
    placed = []
    for i in range(MAX_PENDING_PARTS + 300):  # two parts each: several pwritevs before the end
        batch = make_batch(1, ts=1_000 + i)
        batch[0:8] = (i * 10).to_bytes(8, "big")
        head, body = uf.message_parts("t", i % 3, i * 10, 5_000 + i, batch)
        placed.append((cl.append(head, body), bytes(head) + bytes(body)))
    assert cl.written_pos < cl.write_pos  # the tail still waits
    assert cl.flush() == cl.written_pos  # a flush never claims what is not written
    cl.write_pending()
    assert cl.written_pos == cl.write_pos
    scanned = [(phys, bytes(u)) for phys, _h, u in cl.scan(0)]
    assert scanned == placed
