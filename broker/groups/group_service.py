"""The group coordinator service: one door to every kind of group, as Kafka's GroupCoordinatorService.

Four coordinators hold groups, each its own kind, and a group id belongs to one kind at a time:
classic groups (coordinator.py; their objects also keep every group's committed offsets,
offsets.py), KIP-848 consumer groups (consumer/), KIP-1071 streams groups (streams/) and KIP-932
share groups (share/). The group APIs name only a group id; which coordinator answers is
decided here, so no handler chooses:

- JoinGroup, SyncGroup, Heartbeat and LeaveGroup: a consumer group's classic members are
  answered by the consumer group (Kafka 4's mixed groups), any other id by the classic
  coordinator; a JoinGroup for an id a share or streams group holds is refused;
- OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete: a consumer or streams group checks
  its member's epoch (or whether it consumes the topic), then the offsets go to GroupOffsets;
- ListGroups, DescribeGroups, DeleteGroups: every kind.

Which broker coordinates a group is the classic coordinator's answer for every kind (the
group's `__consumer_offsets` partition, group_loading.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from wire.error_codes import ErrorCode
from broker.groups.coordinator import GroupCoordinator
from broker.groups.group import Group
from broker.groups.join_messages import JoinRequest, JoinResult
from broker.groups.offsets import Fetched, GroupOffsets, OffsetToCommit
from broker.groups.state import GroupState
from broker.groups.consumer import classic_apis, classic_members
from broker.groups.consumer.consumer_group import ConsumerGroup
from broker.groups.consumer.coordinator import ConsumerGroupCoordinator, HeartbeatResult
from broker.groups.consumer.heartbeat_request import HeartbeatRequest
from broker.groups.consumer.target_assignment import preferred_assignor
from broker.groups.share.share_coordinator import ShareGroupCoordinator
from broker.groups.share.share_group_admin import ShareGroupAdmin
from broker.groups.streams import offset_rules
from broker.groups.streams.coordinator import StreamsGroupCoordinator, StreamsHeartbeatResult
from broker.groups.streams.heartbeat_request import StreamsHeartbeat
from broker.groups.streams.streams_group import StreamsGroup


@dataclass(frozen=True)
class NotFound:
    """No group of the kind asked for: GROUP_ID_NOT_FOUND, with Kafka's message."""
    message: str


class SyncResult(NamedTuple):
    error: ErrorCode
    assignment: bytes
    protocol_type: str | None  # None unless the sync succeeded
    protocol_name: str | None


class ListedGroup(NamedTuple):
    group_id: str
    protocol_type: str
    state: str
    group_type: str  # ListGroups v5's type: classic, consumer, share or streams


class GroupCoordinatorService:
    def __init__(self, classic: GroupCoordinator, offsets: GroupOffsets, consumer: ConsumerGroupCoordinator,
                 streams: StreamsGroupCoordinator, share: ShareGroupCoordinator, share_admin: ShareGroupAdmin) -> None:
        self._classic = classic
        self._offsets = offsets
        self._consumer = consumer
        self._streams = streams
        self._share = share
        self._share_admin = share_admin

    def coordinator_error(self, group_id: str) -> ErrorCode | None:
        """NOT_COORDINATOR for a group this broker does not coordinate, whatever its kind."""
        return self._classic.coordinator_error(group_id)

    def other_kind(self, group_id: str, asking: str = "share") -> str | None:
        """Which kind of group other than `asking` ("share" or "streams") holds `group_id`, if one does."""
        if group_id in self._consumer.groups:
            return "consumer"
        if asking != "streams" and group_id in self._streams.groups:
            return "streams"
        if asking != "share" and group_id in self._share.groups:
            return "share"
        classic = self._classic.groups.get(group_id)
        return "classic" if classic is not None and classic.members else None

    def _held_by_share_or_streams(self, group_id: str) -> bool:
        """A share or streams group holds the id, and this broker coordinates it."""
        taken = group_id in self._share.groups or group_id in self._streams.groups
        return taken and not self._classic.coordinator_error(group_id)

    # --- the classic membership APIs ---------------------------------------------------------------

    async def join(self, req: JoinRequest) -> JoinResult:
        """JoinGroup; an id a share or streams group holds is INCONSISTENT_GROUP_PROTOCOL with no
        member id, as Kafka's classicGroupJoin answers for a group of another type."""
        # A streams group with members keeps its id, as Kafka's classicGroupJoin; an empty one gives it up.
        streams = self._streams.groups.get(req.group_id)
        if streams is not None and not streams.members and not self._classic.coordinator_error(req.group_id):
            await self._streams.delete(req.group_id)
        if self._held_by_share_or_streams(req.group_id):
            return JoinResult(ErrorCode.inconsistent_group_protocol, "")
        consumer_group = self._consumer.groups.get(req.group_id)
        if consumer_group is not None and consumer_group.members:  # Kafka 4's mixed groups
            return await classic_members.join(self._consumer, consumer_group, req)
        conflict = await classic_apis.make_room_for_classic(self._consumer, req.group_id)
        return JoinResult(conflict, req.member_id) if conflict else await self._classic.join(req)

    async def sync(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes]) -> SyncResult:
        consumer_group = self._consumer.groups.get(group_id)
        if consumer_group is not None:  # a classic member of a consumer-protocol group
            code, assignment = classic_members.sync(self._consumer, consumer_group, generation, member_id,
                                                    protocol_type, protocol_name)
            ok = code is ErrorCode.none
            return SyncResult(code, assignment, "consumer" if ok else None, protocol_name if ok else None)
        code, assignment = await self._classic.sync(group_id, generation, member_id, instance_id, protocol_type,
                                                    protocol_name, assignments)
        group = self._classic.groups.get(group_id)
        if code is not ErrorCode.none or group is None:
            return SyncResult(code, assignment, None, None)
        return SyncResult(code, assignment, group.protocol_type, group.protocol_name)

    def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        consumer_group = self._consumer.groups.get(group_id)
        if consumer_group is not None:
            return classic_members.heartbeat(self._consumer, consumer_group, generation, member_id)
        return self._classic.heartbeat(group_id, generation, member_id, instance_id)

    async def leave(self, group_id: str, leaving: list[tuple[str, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
        """The top-level error and one per (member id, instance id) leaving."""
        consumer_group = self._consumer.groups.get(group_id)
        if consumer_group is not None:  # classic members of a consumer-protocol group
            return await classic_members.leave(self._consumer, consumer_group, leaving)
        return self._classic.leave(group_id, leaving)

    # --- the KIP-848 and KIP-1071 heartbeats -------------------------------------------------------

    async def consumer_heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        """ConsumerGroupHeartbeat; an id a share or streams group holds is GROUP_ID_NOT_FOUND, as
        Kafka's GroupMetadataManager answers for a group of another type."""
        if self._held_by_share_or_streams(req.group_id):
            return HeartbeatResult(ErrorCode.group_id_not_found, f"Group {req.group_id} is not a consumer group.")
        return await self._consumer.heartbeat(req)

    async def streams_heartbeat(self, req: StreamsHeartbeat) -> StreamsHeartbeatResult:
        return await self._streams.heartbeat(req)

    # --- describing, listing, deleting ----------------------------------------------------------------

    def consumer_group(self, group_id: str) -> ConsumerGroup | NotFound:
        group = self._consumer.groups.get(group_id)
        if group is not None:
            return group
        return NotFound(f"Group {group_id} is not a consumer group." if group_id in self._classic.groups
                        else f"Group {group_id} not found.")

    def consumer_assignor(self, group: ConsumerGroup) -> str:
        """The server assignor the group's target comes from."""
        return preferred_assignor(self._consumer.settings.assignors,
                                  (m.metadata.server_assignor for m in group.members.values()))

    def streams_group(self, group_id: str) -> StreamsGroup | NotFound:
        group = self._streams.groups.get(group_id)
        if group is not None:
            return group
        return NotFound(f"Group {group_id} is not a streams group." if self.other_kind(group_id, "streams") is not None
                        else f"Group {group_id} not found.")

    def classic_group(self, group_id: str) -> Group | NotFound:
        if any(group_id in kind for kind in (self._consumer.groups, self._share.groups, self._streams.groups)):
            return NotFound(f"Group {group_id} is not a classic group.")
        group = self._classic.groups.get(group_id)
        return group if group is not None else NotFound(f"Group {group_id} not found.")

    def listed(self) -> list[ListedGroup]:
        """Every live group of every kind (a consumer or streams group's classic object, which only
        holds its committed offsets, is not listed as a classic group)."""
        consumer_groups = self._consumer.groups
        listed = [ListedGroup(g.group_id, g.protocol_type or "", g.state.value, "classic")
                  for g in self._classic.groups.values()
                  if g.state is not GroupState.DEAD and g.group_id not in consumer_groups
                  and g.group_id not in self._streams.groups]
        listed += [ListedGroup(g.group_id, "consumer", g.state.value, "consumer") for g in consumer_groups.values()]
        listed += [ListedGroup(g.group_id, "share", g.state, "share") for g in self._share.groups.values()]
        listed += [ListedGroup(g.group_id, "streams", g.state.value, "streams") for g in self._streams.groups.values()]
        return listed

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        """DeleteGroups: only empty groups go, with their offsets. A share group goes with its
        share-partitions' state, deleted at the share coordinator first, as Kafka's
        GroupCoordinatorService does."""
        consumer = {g: self._consumer.groups[g] for g in group_ids if g in self._consumer.groups}
        codes: dict[str, ErrorCode] = {}
        for group_id in group_ids:  # share groups first; an id no share group holds falls through
            if group_id in consumer or self.other_kind(group_id) or self._classic.coordinator_error(group_id):
                continue
            share_code = await self._share_admin.delete_group(group_id)
            if share_code is not None:
                codes[group_id] = share_code
        for group_id in group_ids:  # a streams group: refused while it has members, as Kafka's NON_EMPTY_GROUP
            if group_id not in codes and not self._classic.coordinator_error(group_id):
                code = await self._streams.delete(group_id)
                gone = code is ErrorCode.none and group_id not in self._classic.groups
                if code is ErrorCode.non_empty_group or gone:
                    codes[group_id] = code  # else its committed offsets go with the classic delete below
        classic = [g for g in group_ids if g not in consumer and g not in codes]
        codes.update(zip(classic, await self._offsets.delete_groups(classic)))
        for group_id, group in consumer.items():
            codes[group_id] = await classic_apis.delete(self._consumer, group)
        return codes

    # --- committed offsets ---------------------------------------------------------------------------

    async def commit_offsets(self, group_id: str, generation_or_epoch: int, member_id: str, instance_id: str | None,
                             api_version: int, wanted: list[OffsetToCommit]) -> list[ErrorCode]:
        """OffsetCommit: Kafka's error for each entry of `wanted`, in order; checked against the
        group's generation, or a consumer or streams group's member epoch."""
        streams_group = self._streams.groups.get(group_id)
        if streams_group is not None and not self._classic.coordinator_error(group_id):
            code = offset_rules.commit_error(streams_group, member_id, generation_or_epoch, api_version)
            return [code] * len(wanted) if code else await self._offsets.write(group_id, wanted)
        consumer_group = self._consumer.groups.get(group_id)
        if consumer_group is not None:  # a KIP-848 group: member epochs
            return await classic_apis.commit(self._consumer, self._offsets, consumer_group, member_id,
                                             generation_or_epoch, api_version, wanted)
        return await self._offsets.commit(group_id, generation_or_epoch, member_id, instance_id, wanted)

    async def txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int, generation: int,
                                 member_id: str, instance_id: str | None, wanted: list[OffsetToCommit],
                                 enrol_in: str | None) -> list[ErrorCode]:
        """TxnOffsetCommit: as commit_offsets, the offsets pending in the producer's transaction.
        `enrol_in`: for v5+, the transactional id whose transaction gets the offsets partition first."""
        streams_group = self._streams.groups.get(group_id)
        if streams_group is not None and not self._classic.coordinator_error(group_id):
            code = offset_rules.commit_error(streams_group, member_id, generation, None)
            return [code] * len(wanted) if code else await self._offsets.txn_write(
                group_id, producer_id, producer_epoch, wanted, enrol_in)
        consumer_group = self._consumer.groups.get(group_id)
        if consumer_group is not None:  # a KIP-848 group: the generation field is the member epoch
            return await classic_apis.txn_commit(self._consumer, self._offsets, consumer_group, member_id, generation,
                                                 producer_id, producer_epoch, wanted, enrol_in)
        return await self._offsets.txn_commit(group_id, producer_id, producer_epoch, generation, member_id,
                                              instance_id, wanted, enrol_in)

    def fetch_error(self, group_id: str, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        """OffsetFetch's group error: NOT_COORDINATOR, or (v9+, a consumer or streams group) the
        member's epoch."""
        streams_group = self._streams.groups.get(group_id)
        streams_error = None if streams_group is None else offset_rules.fetch_error(streams_group, member_id, member_epoch)
        return (self._classic.coordinator_error(group_id)
                or classic_apis.fetch_error(self._consumer, group_id, member_id, member_epoch) or streams_error)

    def fetch_offsets(self, group_id: str, wanted: list[tuple[str, list[int]]] | None,
                      require_stable: bool) -> Fetched:
        return self._offsets.fetch(group_id, wanted, require_stable)

    async def delete_offsets(self, group_id: str, wanted: list[tuple[str, list[int]]]
                             ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """OffsetDelete: the request's error and each partition's; a topic a consumer or streams
        group consumes keeps its offsets."""
        consumer_group = self._consumer.groups.get(group_id)
        streams_group = self._streams.groups.get(group_id)
        subscribed = (classic_apis.subscribed_to(consumer_group) if consumer_group is not None
                      else offset_rules.reads_topic(streams_group) if streams_group is not None else None)
        return await self._offsets.delete_offsets(group_id, wanted, subscribed)
