"""OffsetDelete: drop a group's committed offsets for some partitions, by Kafka's rules
(ClassicGroup.validateOffsetDelete, isSubscribedToTopic; OffsetMetadataManager.deleteOffsets).

- No such group (or a dead one): GROUP_ID_NOT_FOUND for the whole request.
- A group with members whose protocol type is not "consumer" (Connect, Streams' own types):
  NON_EMPTY_GROUP; an empty group, or a consumer group, goes on.
- Per topic: if the group is subscribed to it, each of its partitions is answered
  GROUP_SUBSCRIBED_TO_TOPIC and keeps its offset. The subscriptions are read from the members'
  metadata for the group's protocol (ConsumerProtocolSubscription, whose v0 fields prefix every
  version: int16 version | int32 topic count | each topic int16 length + UTF-8); a consumer
  group whose subscriptions cannot be read counts as subscribed to everything, to be safe.
- A consumer-protocol group (KIP-848) is never refused whole; it is subscribed to a topic when
  some member's names or regex take it in (the caller says, groups/consumer/classic_apis.py).
- Otherwise each partition's offset, if there is one, gets a tombstone in
  `__consumer_offsets` (one batch for the request; a replay forgets it as Kafka's does) and the
  partition is answered NONE, whether it had an offset or not (offsets.GroupOffsets.delete_offsets).
"""

from __future__ import annotations

import logging
import struct

from broker.groups.group import Group

log = logging.getLogger(__name__)

CONSUMER_PROTOCOL = "consumer"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class UnreadableSubscription(ValueError):
    pass


def subscribed_topics(metadata: bytes) -> set[str]:
    """The topics of a ConsumerProtocolSubscription (any version: its v0 prefix)."""
    try:
        pos = _I16.size
        (count,) = _I32.unpack_from(metadata, pos)
        pos += _I32.size
        if count < 0:
            raise UnreadableSubscription(f"topic count {count}")
        topics = set()
        for _ in range(count):
            (size,) = _I16.unpack_from(metadata, pos)
            pos += _I16.size
            if size < 0 or pos + size > len(metadata):
                raise UnreadableSubscription(f"topic name of {size} bytes")
            topics.add(metadata[pos:pos + size].decode())
            pos += size
        return topics
    except (struct.error, UnicodeDecodeError) as exc:
        raise UnreadableSubscription(str(exc)) from None


def is_subscribed(group: Group, topic: str) -> bool:
    if group.protocol_type != CONSUMER_PROTOCOL:
        return False
    if not group.members:
        return False
    if group.protocol_name is None:
        return True  # no generation chose a protocol yet: the subscriptions are not known
    try:
        return any(topic in subscribed_topics(m.metadata_for(group.protocol_name)) for m in group.members.values())
    except UnreadableSubscription as exc:
        log.warning("group %s: cannot read a member's subscription (%s); treating it as subscribed to %s",
                    group.group_id, exc, topic)
        return True
