"""The fault checkers check themselves: a clean history passes, and each kind of damage a broker
could do to a history (fault_checker.py's and fault_txn_checker.py's lists) is reported. No
broker here."""

from __future__ import annotations

import pytest

from compat_tests.helpers.fault_checker import Entry, violations
from compat_tests.helpers.fault_txn_checker import committed_view, txn_violations
from compat_tests.helpers.fault_txn_workload import Txn
from compat_tests.helpers.fault_workload import Ack

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


# --- transactions (fault_txn_checker.py) ---------------------------------------------------

TPID, ABORT, COMMIT = 2000, 0, 1


def _data(offset: int, value: bytes) -> Entry:
    return Entry(offset, value, TPID, EPOCH, transactional=True)


def _marker(offset: int, kind: int) -> Entry:
    return Entry(offset, b"\x00\x00\x00\x00\x00\x00", TPID, EPOCH, transactional=True, marker=kind)


def _txn_history():
    """One transactional writer on partitions 0 and 1: transaction 0 committed, 1 aborted, 2
    unknown to the client but committed in the log; the read_committed reads of every
    committed record, during the run and after."""
    txns = [Txn(0, n, [(p, b"t0-%d-p%d-0" % (n, p)) for p in (0, 1)], outcome)
            for n, outcome in enumerate(("committed", "aborted", "unknown"))]
    logs = {p: [_data(0, txns[0].values[p][1]), _marker(1, COMMIT), _data(2, txns[1].values[p][1]),
                _marker(3, ABORT), _data(4, txns[2].values[p][1]), _marker(5, COMMIT)] for p in (0, 1)}
    reads = [(p, o, logs[p][o].value) for p in (0, 1) for o in (0, 4)]
    return txns, reads, list(reads), logs


def test_a_clean_transactional_history_passes():
    txns, reads, final_reads, logs = _txn_history()
    assert txn_violations(txns, reads, final_reads, logs) == []
    assert violations({}, [], logs) == []  # markers and transactions are not the other rules'


def test_an_unknown_transaction_may_be_aborted_too():
    txns, reads, final_reads, logs = _txn_history()
    for p in (0, 1):
        logs[p][5] = _marker(5, ABORT)
    reads = final_reads = [r for r in reads if r[1] != 4]
    assert txn_violations(txns, reads, final_reads, logs) == []


def test_a_commit_past_an_open_transaction_is_not_yet_visible():
    txns, reads, final_reads, logs = _txn_history()
    open_txn = Entry(6, b"t1-0-p0-0", TPID + 1, EPOCH, transactional=True)
    logs[0] += [open_txn, _data(7, b"t0-3-p0-0"), _marker(8, COMMIT)]
    view, open_starts = committed_view(logs[0])
    assert open_starts == [6] and 7 not in view and view[4] == logs[0][4].value


def _committed_lost(txns, reads, final_reads, logs):
    del logs[1][0]
    return "committed transaction's record not visible"


def _committed_twice(txns, reads, final_reads, logs):
    logs[0] += [_data(6, txns[0].values[0][1]), _marker(7, COMMIT)]
    return "committed transaction's record visible at more than one offset"


def _aborted_visible(txns, reads, final_reads, logs):
    logs[0][3] = _marker(3, COMMIT)
    return "aborted transaction's record visible in the final log"


def _aborted_read(txns, reads, final_reads, logs):
    reads.append((0, 2, txns[1].values[0][1]))
    return "aborted transaction's record served to read_committed"


def _half_visible(txns, reads, final_reads, logs):
    logs[1][5] = _marker(5, ABORT)  # the unknown transaction: committed on 0, aborted on 1
    return "transaction partly visible"


def _read_past_the_lso(txns, reads, final_reads, logs):
    # an unknown transaction read before its marker, which then aborted it
    txns.append(Txn(0, 3, [(0, b"t0-3-p0-0")]))
    logs[0] += [_data(6, b"t0-3-p0-0"), _marker(7, ABORT)]
    reads.append((0, 6, b"t0-3-p0-0"))
    return "read_committed read beyond the last stable offset"


def _final_read_short(txns, reads, final_reads, logs):
    final_reads.remove((1, 4, txns[2].values[1][1]))
    return "final read_committed read unlike the log's markers"


def _left_open(txns, reads, final_reads, logs):
    del logs[1][5]
    return "transaction open in the final log"


@pytest.mark.parametrize("damage", [_committed_lost, _committed_twice, _aborted_visible, _aborted_read,
                                    _half_visible, _read_past_the_lso, _final_read_short, _left_open])
def test_each_kind_of_transaction_damage_is_reported(damage):
    txns, reads, final_reads, logs = _txn_history()
    kind = damage(txns, reads, final_reads, logs)
    found = txn_violations(txns, reads, final_reads, logs)
    assert any(kind in line for line in found), found
