"""A ConsumerGroupHeartbeat as the coordinator sees it, and the checks Kafka makes before any
state is touched (GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid).

Fields a member leaves null (None) did not change since its last heartbeat; a joining member
(epoch 0) must send its rebalance timeout, its subscription and an empty owned list. A "full"
request carries all three, as a member sends after an error: it gets its assignment back
whether or not it changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wire.error_codes import ErrorCode
from broker.groups.consumer.consumer_group import LEAVE_EPOCH, STATIC_LEAVE_EPOCH, compiled
from broker.groups.consumer.topic_partitions import Assignment


@dataclass(frozen=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    version: int = 1
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""

    @property
    def is_full(self) -> bool:
        return (self.rebalance_timeout_ms != -1 and self.owned is not None
                and (self.subscribed_topic_names is not None or self.subscribed_topic_regex is not None))


class InvalidHeartbeat(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error, self.message = error, message


def check(req: HeartbeatRequest, assignors: tuple[str, ...]) -> None:
    """Raises InvalidHeartbeat with Kafka's error and message for a request it refuses."""
    if (req.version >= 1 or req.member_epoch > 0 or req.member_epoch == LEAVE_EPOCH) and not req.member_id:
        raise InvalidHeartbeat(ErrorCode.invalid_request, "MemberId can't be empty.")
    for value, name in ((req.group_id, "GroupId"), (req.instance_id, "InstanceId"), (req.rack_id, "RackId")):
        if value is not None and not value.strip():
            raise InvalidHeartbeat(ErrorCode.invalid_request, f"{name} can't be empty.")
    if req.member_epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise InvalidHeartbeat(ErrorCode.invalid_request, "RebalanceTimeoutMs must be provided in first request.")
        if req.owned is None or req.owned:
            raise InvalidHeartbeat(ErrorCode.invalid_request, "TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise InvalidHeartbeat(ErrorCode.invalid_request, "Either SubscribedTopicNames or SubscribedTopicRegex "
                                   "must be non-null when (re-)joining.")
    elif req.member_epoch == STATIC_LEAVE_EPOCH:
        if req.instance_id is None:
            raise InvalidHeartbeat(ErrorCode.invalid_request, "InstanceId can't be null.")
    elif req.member_epoch < STATIC_LEAVE_EPOCH:
        raise InvalidHeartbeat(ErrorCode.invalid_request, "MemberEpoch is invalid.")
    if req.subscribed_topic_regex:
        try:
            compiled(req.subscribed_topic_regex)
        except re.error:
            raise InvalidHeartbeat(ErrorCode.invalid_regular_expression,
                                   "SubscribedTopicRegex is not a valid regular expression.") from None
    if req.server_assignor is not None and req.server_assignor not in assignors:
        raise InvalidHeartbeat(ErrorCode.unsupported_assignor, f"ServerAssignor {req.server_assignor} is not supported. "
                               f"Supported assignors: {', '.join(assignors)}.")
