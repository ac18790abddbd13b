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
  partition is answered NONE, whether it had an offset or not.
"""

from __future__ import annotations

import logging
import struct
from functools import partial
from typing import Callable

from wire.error_codes import ErrorCode
from broker.groups import offsets_log
from broker.groups.coordinator import GroupCoordinator
from broker.groups.group import Group
from broker.groups.offsets_store import offset_commit_error
from broker.groups.state import GroupState

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


async def delete_offsets(coord: GroupCoordinator, group_id: str, wanted: list[tuple[str, list[int]]],
                         consumer_subscribed: Callable[[str], bool] | None = None
                         ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
    """(the request's error, each partition's error). `consumer_subscribed`: for a
    consumer-protocol group, whether its members consume a topic; its offsets are kept in the
    classic group of the same id, which exists only once something was committed."""
    not_here = coord.coordinator_error(group_id)
    if not_here:
        return not_here, {}
    group = coord.groups.get(group_id)
    if consumer_subscribed is None:
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.group_id_not_found, {}
        if group.state is not GroupState.EMPTY and group.protocol_type != CONSUMER_PROTOCOL:
            return ErrorCode.non_empty_group, {}
        consumer_subscribed = partial(is_subscribed, group)
    elif group is None:
        group = Group(group_id)  # nothing committed: nothing to delete
    codes, gone = {}, []
    for topic, partitions in wanted:
        subscribed = consumer_subscribed(topic)
        for p in partitions:
            codes[(topic, p)] = ErrorCode.group_subscribed_to_topic if subscribed else ErrorCode.none
            if not subscribed and ((topic, p) in group.offsets or group.pending_txn_offsets.is_pending((topic, p))):
                gone.append((topic, p))
    if gone:
        written = await coord._store.append(group_id, [(offsets_log.offset_key(group_id, t, p), None) for t, p in gone])
        if written is not ErrorCode.none:
            log.info("group %s: writing offset tombstones failed: %s", group_id, written.name)
            return offset_commit_error(written), {}
        for key in gone:  # a tombstone ends an open transaction's offset too, as its replay does
            group.offsets.pop(key, None)
            group.pending_txn_offsets.drop_partition(key)
    return ErrorCode.none, codes
