"""What the offset APIs do with a streams group, as Kafka's StreamsGroup validates them.

A Kafka Streams member commits its tasks' offsets with OffsetCommit v9+ (TxnOffsetCommit under
exactly-once), naming itself and its member epoch; the offsets are kept as every group's are
(offsets.py, in the classic group object of the same id).

- OffsetCommit / TxnOffsetCommit: a member commits at its current member epoch
  (STALE_MEMBER_EPOCH otherwise, UNKNOWN_MEMBER_ID for a stranger); OffsetCommit before v9
  cannot name the epoch (UNSUPPORTED_VERSION). Epoch -1 without a member (admin tools) only
  while the group has no members; a TxnOffsetCommit naming no member, epoch or instance at all
  commits as the transaction's producer.
- OffsetFetch v9+: with a member id, the same epoch check; without one, anyone may read.
- OffsetDelete: a topic the topology reads (while the group has members) keeps its offsets
  (GROUP_SUBSCRIBED_TO_TOPIC), as Kafka's StreamsGroup.isSubscribedToTopic.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode
from broker.groups.streams.streams_group import StreamsGroup

MEMBER_EPOCH_COMMIT_VERSION = 9


def _member_error(group: StreamsGroup, member_id: str | None, member_epoch: int) -> ErrorCode | None:
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.unknown_member_id
    return None if member_epoch == member.current.epoch else ErrorCode.stale_member_epoch


def commit_error(group: StreamsGroup, member_id: str, member_epoch: int, api_version: int | None) -> ErrorCode | None:
    """`api_version` None: a TxnOffsetCommit."""
    if member_epoch < 0 and not group.members:
        return None
    if api_version is None and member_epoch == -1 and not member_id:
        return None
    if member_id not in group.members:
        return ErrorCode.unknown_member_id
    if api_version is not None and api_version < MEMBER_EPOCH_COMMIT_VERSION:
        return ErrorCode.unsupported_version
    return _member_error(group, member_id, member_epoch)


def fetch_error(group: StreamsGroup, member_id: str | None, member_epoch: int) -> ErrorCode | None:
    if member_id is None and member_epoch < 0:
        return None
    return _member_error(group, member_id, member_epoch)


def reads_topic(group: StreamsGroup):
    """OffsetDelete's question: does the topology read this topic, the group having members?"""
    sources = {t for s in group.topology.subtopologies for t in s.source_topics} if group.topology else set()
    return lambda topic: bool(group.members) and topic in sources
