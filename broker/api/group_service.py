"""What the group handlers call: one service for every kind of group (classic, KIP-848 consumer,
KIP-1071 streams, and KIP-932 share groups where the group-wide APIs answer for them), which
decides which coordinator answers a group id. GroupCoordinatorService
(broker/groups/group_service.py) is the one implementation."""

from __future__ import annotations

from typing import Protocol

from wire.error_codes import ErrorCode

from broker.groups.consumer.consumer_group import ConsumerGroup
from broker.groups.consumer.coordinator import HeartbeatResult
from broker.groups.consumer.heartbeat_request import HeartbeatRequest
from broker.groups.group import Group
from broker.groups.group_service import ListedGroup, NotFound, SyncResult
from broker.groups.join_messages import JoinRequest, JoinResult
from broker.groups.offsets import Fetched, OffsetToCommit
from broker.groups.streams.coordinator import StreamsHeartbeatResult
from broker.groups.streams.heartbeat_request import StreamsHeartbeat
from broker.groups.streams.streams_group import StreamsGroup


class GroupService(Protocol):
    def coordinator_error(self, group_id: str) -> ErrorCode | None:
        """NOT_COORDINATOR for a group this broker does not coordinate, whatever its kind."""

    # JoinGroup, SyncGroup, Heartbeat, LeaveGroup: a classic group, or a consumer group's classic members

    async def join(self, req: JoinRequest) -> JoinResult: ...

    async def sync(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None,
                   assignments: dict[str, bytes]) -> SyncResult:
        """The member's assignment; `assignments` (member id -> bytes) is the leader's."""

    def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> ErrorCode: ...

    async def leave(self, group_id: str, leaving: list[tuple[str, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
        """The top-level error and one per (member id, instance id) leaving."""

    async def consumer_heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult: ...

    async def streams_heartbeat(self, req: StreamsHeartbeat) -> StreamsHeartbeatResult: ...

    # describing, listing, deleting

    def consumer_group(self, group_id: str) -> ConsumerGroup | NotFound: ...

    def consumer_assignor(self, group: ConsumerGroup) -> str:
        """The server assignor the group's target comes from."""

    def streams_group(self, group_id: str) -> StreamsGroup | NotFound: ...

    def classic_group(self, group_id: str) -> Group | NotFound: ...

    def listed(self) -> list[ListedGroup]:
        """Every live group of every kind."""

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        """Each group's error (only empty groups go, with their offsets)."""

    # committed offsets

    async def commit_offsets(self, group_id: str, generation_or_epoch: int, member_id: str, instance_id: str | None,
                             api_version: int, wanted: list[OffsetToCommit]) -> list[ErrorCode]:
        """Kafka's error for each entry of `wanted`, in order."""

    async def txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int, generation: int,
                                 member_id: str, instance_id: str | None, wanted: list[OffsetToCommit],
                                 enrol_in: str | None) -> list[ErrorCode]:
        """Kafka's error for each entry of `wanted`, in order; `enrol_in`: for TxnOffsetCommit v5+,
        the transactional id whose transaction gets the group's offsets partition first."""

    def fetch_error(self, group_id: str, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        """OffsetFetch's group error: NOT_COORDINATOR, or a consumer or streams member's stale epoch."""

    def fetch_offsets(self, group_id: str, wanted: list[tuple[str, list[int]]] | None,
                      require_stable: bool) -> Fetched:
        """Committed offsets per topic with each partition's error; `wanted` None: every one committed."""

    async def delete_offsets(self, group_id: str, wanted: list[tuple[str, list[int]]]
                             ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """OffsetDelete: the request's error and each partition's."""
