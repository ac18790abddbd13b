"""The consumer protocol a classic member of a KIP-848 group speaks: subscriptions read at every
version, assignments written as Kafka's ConsumerProtocol writes them, garbage refused with
BadConsumerProtocol alone."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.groups.consumer.consumer_protocol import (
    BadConsumerProtocol, decode_assignment, decode_subscription, encode_assignment, subscription_version,
)

names = st.text(min_size=1, max_size=8)
partitions = st.frozensets(st.integers(0, 2**31 - 1), min_size=1, max_size=4)


def _string(s: str) -> bytes:
    return struct.pack(">h", len(s.encode())) + s.encode()


def _subscription(version: int, topics, owned: dict, rack: str | None) -> bytes:
    out = struct.pack(">hi", version, len(topics)) + b"".join(_string(t) for t in topics) + struct.pack(">i", -1)
    if version >= 1:
        out += struct.pack(">i", len(owned)) + b"".join(
            _string(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in sorted(ps))
            for t, ps in owned.items())
    if version >= 2:
        out += struct.pack(">i", 4)
    if version >= 3:
        out += struct.pack(">h", -1) if rack is None else _string(rack)
    return out


@given(st.integers(0, 3), st.lists(names, max_size=3), st.dictionaries(names, partitions, max_size=3),
       st.none() | names)
def test_subscriptions_are_read_at_every_version(version, topics, owned, rack):
    s = decode_subscription(_subscription(version, topics, owned, rack))
    assert (s.version, s.topics) == (version, tuple(topics))
    assert s.owned == (owned if version >= 1 else {}), "v0 owns nothing: an eager member revoked all"
    assert s.rack_id == (rack if version >= 3 else None)
    assert subscription_version(_subscription(version, topics, owned, rack)) == version


@given(st.dictionaries(names, partitions, max_size=4), st.integers(0, 5))
def test_assignments_round_trip(assigned, version):
    data = encode_assignment(assigned, version)
    assert struct.unpack_from(">h", data)[0] == min(version, 3)
    assert decode_assignment(data) == assigned


def test_assignment_layout_is_kafkas():
    # version | 1 topic "t" | 2 partitions 0, 5 | null user data
    assert encode_assignment({"t": frozenset({5, 0})}, 1) == (
        b"\x00\x01" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00"
        + b"\x00\x00\x00\x05" + b"\xff\xff\xff\xff")


@given(st.binary(max_size=40))
def test_garbage_raises_bad_consumer_protocol_only(raw):
    for decode in (decode_subscription, decode_assignment):
        try:
            decode(raw)
        except BadConsumerProtocol:
            pass


def test_an_empty_subscription_is_unreadable():
    with pytest.raises(BadConsumerProtocol):
        decode_subscription(b"")
