"""What the older group APIs do with a consumer-protocol group, as Kafka 4's coordinator does.

- OffsetCommit: a member commits at its current member epoch (STALE_MEMBER_EPOCH otherwise,
  ILLEGAL_GENERATION for a classic member, whose generation is its member epoch;
  UNKNOWN_MEMBER_ID for a stranger); a commit with epoch -1 and no member (admin tools,
  `assign()` consumers) only while the group has no members. A consumer-protocol member must
  use OffsetCommit v9+ (UNSUPPORTED_VERSION), whose field is the member epoch; a classic
  member any version.
- TxnOffsetCommit: the same member and epoch check at every version (its generation field
  carries the member epoch), as Kafka's validateOffsetCommit with isTransactional: v0-v2 name
  no member, so they may commit only while the group has no members.
- OffsetFetch v9+: with a member id, the same epoch check; without one, anyone may read.
- OffsetDelete: a topic some member subscribes to (by name or regex) keeps its offsets
  (GROUP_SUBSCRIBED_TO_TOPIC), as Kafka's ConsumerGroup.isSubscribedToTopic.
- DeleteGroups: an empty group goes with its offsets (NON_EMPTY_GROUP otherwise).
- JoinGroup: a classic member joins a group with members as one of them (classic_members.py);
  an empty consumer group gives way and becomes classic.
"""

from __future__ import annotations

import logging
from typing import Callable

from wire.error_codes import ErrorCode
from broker.groups import offsets_log
from broker.groups.offsets import GroupOffsets, OffsetToCommit
from broker.groups.consumer.consumer_group import ConsumerGroup
from broker.groups.consumer.coordinator import ConsumerGroupCoordinator

log = logging.getLogger(__name__)

MEMBER_EPOCH_COMMIT_VERSION = 9


def _member_error(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode | None:
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.unknown_member_id
    if member_epoch == member.current.epoch:
        return None
    return ErrorCode.stale_member_epoch if member.metadata.classic is None else ErrorCode.illegal_generation


def txn_commit_error(group: ConsumerGroup, member_id: str, member_epoch: int) -> ErrorCode | None:
    if member_epoch < 0 and not group.members:
        return None
    return _member_error(group, member_id, member_epoch)


def commit_error(group: ConsumerGroup, member_id: str, member_epoch: int, api_version: int) -> ErrorCode | None:
    if member_epoch < 0 and not group.members:
        return None
    code = _member_error(group, member_id, member_epoch)
    member = group.members.get(member_id)
    if code is ErrorCode.unknown_member_id or api_version >= MEMBER_EPOCH_COMMIT_VERSION or member.metadata.classic:
        return code
    return ErrorCode.unsupported_version  # a consumer-protocol member commits at its epoch, v9+


async def commit(cg: ConsumerGroupCoordinator, offsets: GroupOffsets, group: ConsumerGroup, member_id: str,
                 member_epoch: int, api_version: int, wanted: list[OffsetToCommit]) -> list[ErrorCode]:
    code = cg.coordinator_error(group.group_id) or commit_error(group, member_id, member_epoch, api_version)
    if code:
        return [code] * len(wanted)
    return await offsets.write(group.group_id, wanted)


async def txn_commit(cg: ConsumerGroupCoordinator, offsets: GroupOffsets, group: ConsumerGroup, member_id: str,
                     member_epoch: int, producer_id: int, producer_epoch: int, wanted: list[OffsetToCommit],
                     enrol_in: str | None) -> list[ErrorCode]:
    code = cg.coordinator_error(group.group_id) or txn_commit_error(group, member_id, member_epoch)
    if code:
        return [code] * len(wanted)
    return await offsets.txn_write(group.group_id, producer_id, producer_epoch, wanted, enrol_in)


def subscribed_to(group: ConsumerGroup) -> Callable[[str], bool]:
    """OffsetDelete's question: does some member consume this topic?"""
    return lambda topic: any(m.subscribes_to(topic) for m in group.members.values())


def fetch_error(cg: ConsumerGroupCoordinator, group_id: str, member_id: str | None,
                member_epoch: int) -> ErrorCode | None:
    group = cg.groups.get(group_id)
    if group is None or (member_id is None and member_epoch < 0):
        return None
    return _member_error(group, member_id, member_epoch)


async def delete(cg: ConsumerGroupCoordinator, group: ConsumerGroup) -> ErrorCode:
    not_here = cg.coordinator_error(group.group_id)
    if not_here:
        return not_here
    async with group.lock:
        if group.members:
            return ErrorCode.non_empty_group
        return await _forget(cg, group, with_offsets=True)


async def make_room_for_classic(cg: ConsumerGroupCoordinator, group_id: str) -> ErrorCode | None:
    """Before a classic JoinGroup: the error it gets, or None once no consumer group is in its way."""
    group = cg.groups.get(group_id)
    if group is None:
        return None
    async with group.lock:
        if group.members:
            return ErrorCode.inconsistent_group_protocol
        written = await _forget(cg, group, with_offsets=False)
        return None if written is ErrorCode.none else written


async def _forget(cg: ConsumerGroupCoordinator, group: ConsumerGroup, with_offsets: bool) -> ErrorCode:
    records = cg.tombstones(group)
    holder = cg.classic.groups.get(group.group_id)
    if with_offsets and holder is not None:
        records = [(offsets_log.offset_key(group.group_id, t, p), None) for t, p in holder.offsets] + records
    written = await cg.store.writes.write(group.group_id, records)
    if written is not ErrorCode.none:
        log.info("group %s: deleting the consumer group failed: %s", group.group_id, written.name)
        return written
    cg.unload(group)
    if with_offsets and holder is not None and not holder.members:
        cg.classic.groups.pop(group.group_id, None)
    return written
