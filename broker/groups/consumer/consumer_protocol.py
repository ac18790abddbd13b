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

import struct
from dataclasses import dataclass

_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")
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
    r = _Reader(data)
    version = r.i16()
    if version < 0:
        raise BadConsumerProtocol(f"subscription version {version}")
    topics = tuple(r.array(r.string))
    r.bytes()
    owned: dict[str, frozenset[int]] = {}
    rack = None
    if version >= 1:
        for topic, partitions in r.array(lambda: (r.string(), r.array(r.i32))):
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
    out = bytearray(_I16.pack(min(max(version, 0), LATEST_ASSIGNMENT_VERSION)))
    topics = sorted((t, ps) for t, ps in assigned.items() if ps)
    out += _I32.pack(len(topics))
    for topic, partitions in topics:
        name = topic.encode()
        out += _I16.pack(len(name)) + name + _I32.pack(len(partitions))
        for p in sorted(partitions):
            out += _I32.pack(p)
    out += _I32.pack(-1)  # no user data: the assignor ran on the coordinator
    return bytes(out)


def decode_assignment(data: bytes) -> dict[str, frozenset[int]]:
    """A classic member's assignment bytes (empty: nothing assigned yet)."""
    if not data:
        return {}
    r = _Reader(data)
    r.i16()
    out: dict[str, frozenset[int]] = {}
    for topic, partitions in r.array(lambda: (r.string(), r.array(r.i32))):
        out[topic] = out.get(topic, frozenset()) | frozenset(partitions)
    return out


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = bytes(data), 0

    def _take(self, codec: struct.Struct) -> int:
        try:
            (v,) = codec.unpack_from(self.data, self.pos)
        except struct.error:
            raise BadConsumerProtocol("ends early") from None
        self.pos += codec.size
        return v

    def i16(self) -> int:
        return self._take(_I16)

    def i32(self) -> int:
        return self._take(_I32)

    def _raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise BadConsumerProtocol(f"a length of {n} runs past the end")
        v = self.data[self.pos:self.pos + n]
        self.pos += n
        return v

    def nullable_string(self) -> str | None:
        n = self.i16()
        if n == -1:
            return None
        try:
            return self._raw(n).decode()
        except UnicodeDecodeError as exc:
            raise BadConsumerProtocol(str(exc)) from None

    def string(self) -> str:
        s = self.nullable_string()
        if s is None:
            raise BadConsumerProtocol("null string")
        return s

    def bytes(self) -> bytes | None:
        n = self.i32()
        return None if n == -1 else self._raw(n)

    def array(self, read_one) -> list:
        n = self.i32()
        if n < 0 or n > len(self.data) - self.pos:
            raise BadConsumerProtocol(f"array count {n}")
        return [read_one() for _ in range(n)]
