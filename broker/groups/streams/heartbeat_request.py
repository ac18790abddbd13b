"""A StreamsGroupHeartbeat as the coordinator sees it, and the checks Kafka makes before any
state is touched (GroupCoordinatorService's throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures,
throwIfStreamsGroupHeartbeatRequestIsInvalid and throwIfInvalidTopology, in that order).

Fields a member leaves null (None) did not change since its last heartbeat; a joining member
(epoch 0) sends its rebalance timeout, its topology and empty task lists.
"""

from __future__ import annotations

from dataclasses import dataclass

from wire.error_codes import ErrorCode
from broker.groups.streams.tasks import Tasks
from broker.groups.streams.topology import Topology

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass(frozen=True)
class StreamsHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    owned: Tasks | None = None  # None: the member did not say
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] | None = None
    shutdown_application: bool = False
    task_offsets: dict[tuple[str, int], int] | None = None  # (subtopology, partition) -> offset sum
    task_end_offsets: dict[tuple[str, int], int] | None = None
    client_id: str = ""
    client_host: str = ""


class InvalidHeartbeat(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error, self.message = error, message


def check(req: StreamsHeartbeat, owned_kinds: tuple[bool, bool, bool], regex_used: bool,
          changelog_partitions: list[tuple[str, int]]) -> None:
    """Raises InvalidHeartbeat with Kafka's error and message for a request it refuses.
    `owned_kinds`: whether each of the active, standby and warm-up lists was sent (non-null);
    `changelog_partitions`: (name, partitions) of the changelog topics the topology declares."""
    if regex_used:
        raise InvalidHeartbeat(ErrorCode.invalid_request, "Regular expressions for source topics are not supported yet.")
    for value, name in ((req.member_id, "MemberId"), (req.group_id, "GroupId"), (req.instance_id, "InstanceId"),
                        (req.rack_id, "RackId")):
        if value is not None and not value.strip():
            raise InvalidHeartbeat(ErrorCode.invalid_request, f"{name} can't be empty.")
    if req.member_epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise InvalidHeartbeat(ErrorCode.invalid_request, "RebalanceTimeoutMs must be provided in first request.")
        for sent, kind, label in zip(owned_kinds, ("active", "standby", "warmup"),
                                     ("ActiveTasks", "StandbyTasks", "WarmupTasks")):
            if not sent or (req.owned is not None and req.owned.of(kind)):
                raise InvalidHeartbeat(ErrorCode.invalid_request, f"{label} must be empty when (re-)joining.")
        if req.topology is None:
            raise InvalidHeartbeat(ErrorCode.invalid_request, "Topology must be non-null when (re-)joining.")
        for name, partitions in changelog_partitions:
            if partitions != 0:
                raise InvalidHeartbeat(ErrorCode.streams_invalid_topology, f"Changelog topic {name} must have an undefined "
                                       f"partition count, but it is set to {partitions}.")
    elif req.member_epoch == STATIC_LEAVE_EPOCH:
        if req.instance_id is None:
            raise InvalidHeartbeat(ErrorCode.invalid_request, "InstanceId can't be null.")
    elif req.member_epoch < STATIC_LEAVE_EPOCH:
        raise InvalidHeartbeat(ErrorCode.invalid_request, f"MemberEpoch is {req.member_epoch}, but must be greater than or "
                               "equal to -2.")
    if any(owned_kinds) and not all(owned_kinds):
        raise InvalidHeartbeat(ErrorCode.invalid_request, "If one task-type is non-null, all must be non-null.")
    if req.member_epoch != 0 and req.topology is not None:
        raise InvalidHeartbeat(ErrorCode.invalid_request, "Topology can only be provided when (re-)joining.")
