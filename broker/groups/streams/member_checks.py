"""The checks a streams heartbeat passes against the group as it is, in Kafka's words
(GroupMetadataManager's throwIfStreamsGroupMemberEpochIsInvalid, throwIfRequestContainsInvalidTasks
and the static member checks), and the member metadata a heartbeat updates. A failed check is
`Refused`: the member gets its error and the group stays as it was.
"""

from __future__ import annotations

from dataclasses import replace

from wire.error_codes import ErrorCode
from broker.groups.streams.heartbeat_request import StreamsHeartbeat
from broker.groups.streams.streams_group import MemberMetadata, StreamsGroup, StreamsMember
from broker.groups.streams.tasks import Tasks


class Refused(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error, self.message = error, message


def check_static(group: StreamsGroup, req: StreamsHeartbeat) -> StreamsMember | None:
    """The member holding the request's instance id, after Kafka's checks of it: a join may not
    take an id another member still holds, and any other heartbeat must come from its holder."""
    holder = next((m for m in group.members.values() if m.metadata.instance_id == req.instance_id), None)
    if req.member_epoch == 0:
        if holder is not None and holder.member_id != req.member_id and holder.current.epoch != -2:
            raise Refused(ErrorCode.unreleased_instance_id, f"Static member {req.member_id} with instance id "
                          f"{req.instance_id} cannot join the group because the instance id is owned by "
                          f"{holder.member_id} member.")
        return holder
    if holder is None:
        raise Refused(ErrorCode.unknown_member_id, f"Instance id {req.instance_id} is unknown.")
    if holder.member_id != req.member_id:
        raise Refused(ErrorCode.fenced_instance_id, f"Static member {req.member_id} with instance id {req.instance_id} "
                      f"was fenced by member {holder.member_id}.")
    return holder


def check_epoch(member: StreamsMember, req: StreamsHeartbeat) -> None:
    """Kafka's throwIfStreamsGroupMemberEpochIsInvalid: the member's epoch, or the one before it
    if the answer that moved it on was lost and it holds no more than it is assigned now."""
    epoch = member.current.epoch
    if req.member_epoch > epoch:
        raise Refused(ErrorCode.fenced_member_epoch, f"The streams group member has a greater member epoch "
                       f"({req.member_epoch}) than the one known by the group coordinator ({epoch}). "
                       "The member must abandon all its tasks and rejoin.")
    if req.member_epoch < epoch and not (req.member_epoch == member.current.previous_epoch and req.owned is not None
                                         and req.owned.is_subset(member.current.assigned)):
        raise Refused(ErrorCode.fenced_member_epoch, f"The streams group member has a smaller member epoch "
                       f"({req.member_epoch}) than the one known by the group coordinator ({epoch}). "
                       "The member must abandon all its tasks and rejoin.")


def check_owned(tasks: dict[str, int], owned: Tasks) -> None:
    """Kafka's throwIfRequestContainsInvalidTasks: only tasks the configured topology has."""
    for kind in ("active", "standby", "warmup"):
        for s, ps in owned.of(kind).items():
            if s not in tasks:
                raise Refused(ErrorCode.invalid_request, f"Subtopology {s} does not exist in the topology.")
            bad = sorted(p for p in ps if p >= tasks[s] or p < 0)
            if bad:
                raise Refused(ErrorCode.invalid_request, f"Task {bad[0]} for subtopology {s} is invalid. Number of tasks "
                              f"for this subtopology: {tasks[s]}")


def updated(m: MemberMetadata, req: StreamsHeartbeat) -> MemberMetadata:
    """The member's metadata with what this heartbeat changed (null fields: unchanged)."""
    return replace(
        m, process_id=m.process_id if req.process_id is None else req.process_id,
        instance_id=m.instance_id if req.instance_id is None else req.instance_id,
        rack_id=m.rack_id if req.rack_id is None else req.rack_id,
        client_id=req.client_id, client_host=req.client_host,
        topology_epoch=m.topology_epoch if req.topology is None else req.topology.epoch,
        rebalance_timeout_ms=m.rebalance_timeout_ms if req.rebalance_timeout_ms == -1 else req.rebalance_timeout_ms,
        user_endpoint=m.user_endpoint if req.user_endpoint is None else req.user_endpoint,
        client_tags=m.client_tags if req.client_tags is None else req.client_tags)
