"""The harness checks itself: every way a broker can corrupt a round trip makes the comparison fail.

No broker here. A comparison that cannot fail would let a broken broker pass every client module,
so each mutation below (one per kind of damage) must raise.
"""

from __future__ import annotations

import dataclasses

import pytest

from compat_tests.helpers.broker_process import api_versions_roundtrip, free_port
from compat_tests.helpers.records import Consumed, Sent, assert_round_trip, assert_values_in_order, round_trip_records


def _perfect():
    sent, consumed, next_offset = [], [], {0: 0, 1: 0, 2: 0}
    for i, r in enumerate(round_trip_records()):
        p = r.partition if r.partition is not None else int(r.key[-1:]) % 3
        o = next_offset[p]
        next_offset[p] += 1
        sent.append(Sent(r, p, o))
        consumed.append(Consumed(p, o, r.key, r.value, r.headers, r.timestamp))
    return sent, consumed


def test_perfect_round_trip_passes():
    sent, consumed = _perfect()
    assert_round_trip(sent, consumed)


def _replace(consumed, index, **changes):
    out = list(consumed)
    out[index] = dataclasses.replace(out[index], **changes)
    return out


MUTATIONS = {
    "missing record": lambda c: c[:-1],
    "duplicate record": lambda c: c + [c[3]],
    "value changed": lambda c: _replace(c, 4, value=c[4].value[:-1] + b"\x01"),
    "empty value became null": lambda c: _replace(c, 1, value=None),
    "null value became empty": lambda c: _replace(c, 3, value=b""),
    "null key became empty": lambda c: _replace(c, 1, key=b""),
    "key changed": lambda c: _replace(c, 0, key=b"alphA"),
    "header dropped": lambda c: _replace(c, 0, headers=c[0].headers[:-1]),
    "null header became empty": lambda c: _replace(c, 0, headers=(("h1", b"v1"), ("h2", b""), ("nul", b""))),
    "headers reordered": lambda c: _replace(c, 2, headers=tuple(reversed(c[2].headers[:2])) + c[2].headers[2:]),
    "timestamp changed": lambda c: _replace(c, 5, timestamp=c[5].timestamp + 1),
    "log-append time": lambda c: _replace(c, 5, timestamp_type=1),
    "offset shifted": lambda c: _replace(c, 2, offset=c[2].offset + 10),
    "wrong partition": lambda c: _replace(c, 0, partition=1),
}


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_damaged_round_trip_fails(mutation):
    sent, consumed = _perfect()
    with pytest.raises(AssertionError):
        assert_round_trip(sent, MUTATIONS[mutation](consumed))


def test_acked_offsets_with_gap_fail():
    sent, consumed = _perfect()
    sent[0].offset += 100
    with pytest.raises(AssertionError):
        assert_round_trip(sent, consumed)


def test_key_split_across_partitions_fails():
    sent, consumed = _perfect()
    keyed = [s for s in sent if s.rec.partition is None]
    a, b = keyed[0], keyed[1]
    assert a.rec.key == b.rec.key
    moved = (b.partition + 1) % 3
    sent2 = [Sent(s.rec, moved, 99) if s is b else s for s in sent]
    with pytest.raises(AssertionError):
        assert_round_trip(sent2, consumed)


def test_values_in_order_detects_reordering_and_loss():
    values = [b"a", b"b", b"c"]
    ok = [Consumed(0, i, None, v, (), 0) for i, v in enumerate(values)]
    assert_values_in_order(ok, values)
    with pytest.raises(AssertionError):
        assert_values_in_order(ok[:2], values)
    with pytest.raises(AssertionError):
        assert_values_in_order([ok[1], ok[0], ok[2]], values)


def test_readiness_probe_refuses_a_silent_port():
    import socket
    import threading

    port = free_port()
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen()

    def accept_and_close():
        conn, _ = srv.accept()
        conn.recv(100)
        conn.close()

    t = threading.Thread(target=accept_and_close, daemon=True)
    t.start()
    try:
        with pytest.raises(OSError):
            api_versions_roundtrip("127.0.0.1", port, timeout=2)
    finally:
        srv.close()
