"""The fault checker checks itself: a clean history passes, and each kind of damage a broker
could do to a history (fault_checker.py's list) is reported. No broker here."""

from __future__ import annotations

import pytest

from compat_tests.fault_checker import Entry, violations
from compat_tests.fault_workload import Ack

PID, EPOCH = 1000, 0


def _history(n: int = 6):
    """Two writers alternating on partition 0, every record acknowledged and read."""
    log = [Entry(o, b"w%d-p0-%d" % (o % 2, o // 2), PID + o % 2, EPOCH) for o in range(n)]
    acks = {0: [Ack(float(e.offset), e.offset, e.value) for e in log]}
    reads = [(0, e.offset, e.value) for e in log]
    return acks, reads, {0: log}


def test_a_clean_history_passes():
    assert violations(*_history()) == []


def test_a_rewrite_by_a_new_producer_epoch_is_no_duplicate():
    acks, reads, logs = _history()
    logs[0].append(Entry(6, logs[0][4].value, PID, EPOCH + 1))
    assert violations(acks, reads, logs) == []


def test_an_ack_without_an_offset_is_checked_for_loss_only():
    acks, reads, logs = _history()
    acks[0][1] = Ack(1.0, None, acks[0][1].value)
    assert violations(acks, reads, logs) == []
    del logs[0][1]
    assert any("lost" in line for line in violations(acks, reads, logs))


def _lost(acks, reads, logs):
    del logs[0][3]
    return "lost"


def _moved(acks, reads, logs):
    acks[0][2] = Ack(2.0, 3, acks[0][2].value)
    return "acknowledged at another offset"


def _duplicate(acks, reads, logs):
    logs[0].append(Entry(6, logs[0][4].value, logs[0][4].producer_id, EPOCH))
    return "duplicate within one producer epoch"


def _reordered(acks, reads, logs):
    a, b = logs[0][0], logs[0][2]  # writer 0's seq 0 and 1 swapped
    logs[0][0], logs[0][2] = Entry(0, b.value, b.producer_id, EPOCH), Entry(2, a.value, a.producer_id, EPOCH)
    return "out of order"


def _wrong_partition(acks, reads, logs):
    logs[0].append(Entry(6, b"w0-p1-9", PID, EPOCH))
    return "out of order"


def _phantom(acks, reads, logs):
    reads.append((0, 6, b"w1-p0-9"))
    return "phantom read"


@pytest.mark.parametrize("damage", [_lost, _moved, _duplicate, _reordered, _wrong_partition, _phantom])
def test_each_kind_of_damage_is_reported(damage):
    acks, reads, logs = _history()
    kind = damage(acks, reads, logs)
    found = violations(acks, reads, logs)
    assert any(kind in line for line in found), found
