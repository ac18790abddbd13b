"""The bytes of a committed offset in `__consumer_offsets` (broker/groups/offsets_log.py), laid
out as Kafka's OffsetCommitKey v1 and OffsetCommitValue v3, so the topic reads like Kafka's."""

from __future__ import annotations

import struct

from broker.groups import offsets_log
from broker.groups.committed_offset import CommittedOffset


def _string(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def test_an_offset_key_is_version_1_group_topic_partition():
    assert offsets_log.offset_key("grüppe", "t-1", 17) == (
        struct.pack(">h", 1) + _string("grüppe") + _string("t-1") + struct.pack(">i", 17))
    assert offsets_log.decode_key(offsets_log.offset_key("grüppe", "t-1", 17)) == ("offset", ("grüppe", "t-1", 17))


def test_an_offset_value_is_version_3_with_its_leader_epoch_and_metadata():
    c = CommittedOffset(2**40 + 5, 7, "mé", 1_700_000_000_000)
    assert offsets_log.offset_value(c) == (
        struct.pack(">hqi", 3, 2**40 + 5, 7) + _string("mé") + struct.pack(">q", 1_700_000_000_000))
    assert offsets_log.decode_offset_value(offsets_log.offset_value(c)) == c
