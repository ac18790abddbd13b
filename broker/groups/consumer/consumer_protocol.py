"""The consumer protocol embedded in JoinGroup and SyncGroup, as a classic member of a KIP-848
group speaks it (Kafka's ConsumerProtocol): the coordinator reads a member's subscription and
writes its assignment, where a classic group's leader would.

Both are non-flexible (string = int16 length + UTF-8, -1 null; array = int32 count; bytes =
int32 length, -1 null), with fields added per version:

    ConsumerProtocolSubscription  int16 version | [string] topics | bytes user_data
                                  | v1+ [string topic | [int32] partitions] owned_partitions
                                  | v2+ int32 generation_id | v3+ string? rack_id
    ConsumerProtocolAssignment    int16 version | [string topic | [int32] partitions] assigned
                                  | bytes user_data

A reader takes the fields of the versions it knows and ignores the rest, as Kafka's does.
"""

from __future__ import annotations

from dataclasses import dataclass

from wire.field_codec import FieldReader, FieldWriter

LATEST_ASSIGNMENT_VERSION = 3


class BadConsumerProtocol(ValueError):
    pass


@dataclass(frozen=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: dict[str, frozenset[int]]  # by topic name; v0 has none: an eager member owns nothing
    rack_id: str | None = None


def decode_subscription(data: bytes) -> Subscription:
    r = _reader(data)
    version = r.i16()
    if version < 0:
        raise BadConsumerProtocol(f"subscription version {version}")
    topics = tuple(_array(r, r.string))
    r.nullable_bytes()
    owned: dict[str, frozenset[int]] = {}
    rack = None
    if version >= 1:
        for topic, partitions in _array(r, lambda: (r.string(), _array(r, r.i32))):
            owned[topic] = owned.get(topic, frozenset()) | frozenset(partitions)
    if version >= 2:
        r.i32()  # the generation the owned partitions are of: the member epoch checks them here
    if version >= 3:
        rack = r.nullable_string()
    return Subscription(version, topics, owned, rack)


def subscription_version(data: bytes) -> int:
    """The version an assignment for this subscription is written in (0 if it is unreadable)."""
    try:
        return decode_subscription(data).version
    except BadConsumerProtocol:
        return 0


def encode_assignment(assigned: dict[str, frozenset[int]], version: int) -> bytes:
    """`version`: the member's subscription's (capped at the latest), as Kafka answers."""
    w = FieldWriter().i16(min(max(version, 0), LATEST_ASSIGNMENT_VERSION))
    topics = sorted((t, ps) for t, ps in assigned.items() if ps)
    w.array(topics, lambda tp: w.nullable_string(tp[0]).array(sorted(tp[1]), w.i32, False), False)
    return w.nullable_bytes(None).value()  # no user data: the assignor ran on the coordinator


def decode_assignment(data: bytes) -> dict[str, frozenset[int]]:
    """A classic member's assignment bytes (empty: nothing assigned yet)."""
    if not data:
        return {}
    r = _reader(data)
    r.i16()
    out: dict[str, frozenset[int]] = {}
    for topic, partitions in _array(r, lambda: (r.string(), _array(r, r.i32))):
        out[topic] = out.get(topic, frozenset()) | frozenset(partitions)
    return out


def _reader(data: bytes) -> FieldReader:
    return FieldReader(data, BadConsumerProtocol)


def _array(r: FieldReader, read_one) -> list:
    n = r.count(flexible=False)
    if n is None:
        raise BadConsumerProtocol("null array")
    return [read_one() for _ in range(n)]
