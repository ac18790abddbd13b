"""What ShareFetch and ShareAcknowledge share: finding a share-partition's log partition by topic
id (with the errors a partition that cannot be served gets), applying a partition's
acknowledgement batches, and the per-partition answer's leader hint (KIP-951's, as Fetch).
"""

from __future__ import annotations

import uuid
from typing import Any, Iterable, NamedTuple

from wire.error_codes import ErrorCode
from replica.partition import now_ms
from replica.readable_partition import ReadablePartition

from broker.api.share_group_service import ShareGroupService
from broker.api.topic_lookup import TopicLookup
from broker.cluster.view import ClusterView
from broker.groups.share.share_partition import AckType
from broker.groups.share.state_persister import ShareStateUnavailable
from broker.api.access_checks import AccessChecks
from broker.security.acl.model import Operation, ResourceType
from broker.handlers.current_leader import LeaderHint, leader_hint
from broker.api.response_builder import make, nested

HINT_ERRORS = frozenset({ErrorCode.not_leader_or_follower})


class Target(NamedTuple):
    topic: str | None
    partition: ReadablePartition | None  # None with an error
    error: ErrorCode


def target(topics: TopicLookup, topic_id: uuid.UUID, index: int, unreadable: frozenset[str]) -> Target:
    """The partition of (topic id, index) a share fetch may read, or why not."""
    topic = topics.get_by_id(topic_id)
    if topic is None:
        return Target(None, None, ErrorCode.unknown_topic_id)
    if topic.name in unreadable:
        return Target(topic.name, None, ErrorCode.topic_authorization_failed)
    partition = topics.partition(topic.name, index)
    if partition is None:
        return Target(topic.name, None, topics.missing_partition_error(topic.name, index))
    if not partition.is_leader:
        return Target(topic.name, partition, ErrorCode.not_leader_or_follower)
    return Target(topic.name, partition, ErrorCode.none)


def unreadable_topics(topics: TopicLookup, authorizer: AccessChecks,
                      topic_ids: Iterable[uuid.UUID]) -> frozenset[str]:
    """Topics the client may not READ (ACLs, as Kafka's handleShareFetchRequest)."""
    if not authorizer.enabled:
        return frozenset()
    names = [t.name for tid in topic_ids if (t := topics.get_by_id(tid)) is not None]
    return authorizer.denied_names(Operation.READ, ResourceType.TOPIC, names)


async def acknowledge(shares: ShareGroupService, topics: TopicLookup, group_id: str, member_id: str,
                      topic_id: uuid.UUID, index: int, batches: Any, unreadable: frozenset[str],
                      version: int) -> tuple[ErrorCode, str | None]:
    """Apply one partition's AcknowledgementBatches of a request at `version`: (error, message).
    RENEW is v2's (KIP-1222): in a v1 request it is an unknown type, INVALID_REQUEST; a group
    whose share.renew.acknowledge.enable is false has the partition's acknowledgements refused,
    none applied, with INVALID_RECORD_STATE, as Kafka refuses them."""
    found = target(topics, topic_id, index, unreadable)
    if found.error is not ErrorCode.none or found.partition is None:
        return found.error, None
    acks = [(b.first_offset, b.last_offset, tuple(b.acknowledge_types)) for b in batches]
    renewing = any(AckType.RENEW in types for _, _, types in acks)
    if renewing and version < 2:
        return ErrorCode.invalid_request, "The RENEW acknowledge type needs ShareFetch / ShareAcknowledge v2."
    if renewing and not shares.config_of(group_id).renew_acknowledge_enable:
        return ErrorCode.invalid_record_state, f"RENEW acknowledgements are disabled for group {group_id} " \
                                       f"(share.renew.acknowledge.enable=false)."
    try:
        return await shares.acknowledge((group_id, topic_id, index), found.partition, member_id, acks, now_ms())
    except ShareStateUnavailable as exc:
        return exc.error, f"the share-partition state could not be read: {exc}"


def hint(view: ClusterView, code: ErrorCode, topic: str | None, index: int,
         partition: ReadablePartition | None) -> LeaderHint | None:
    return leader_hint(view, topic, index, partition) if code in HINT_ERRORS and topic else None


def leader(cls: type, found_hint: LeaderHint | None) -> Any:
    """The partition's LeaderIdAndEpoch: the hint's, or -1 / -1 (the share schemas give no default)."""
    return make(nested(cls, "LeaderIdAndEpoch"), leader_id=found_hint.leader_id if found_hint else -1,
                leader_epoch=found_hint.leader_epoch if found_hint else -1)
