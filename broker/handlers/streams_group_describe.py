"""StreamsGroupDescribe (KIP-1071) v0: a streams group's state, epochs, topology (as configured
against the topics: internal topics with their derived partition counts) and members, each with
its current and target tasks.

As Kafka: NOT_COORDINATOR for a group coordinated elsewhere, GROUP_AUTHORIZATION_FAILED without
DESCRIBE on it, GROUP_ID_NOT_FOUND for a group that does not exist or is of another type.
"""

from __future__ import annotations

from typing import Any, Mapping

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.features import OFF_MESSAGE, STREAMS_VERSION, switched_off
from broker.groups.group_service import NotFound
from broker.groups.streams.streams_group import StreamsGroup
from broker.groups.streams.tasks import TaskMap, Tasks
from broker.groups.streams.topology import TopicInfo
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make, nested

UNKNOWN_OPERATIONS = -(2**31)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    described = []
    for group_id in request.group_ids:
        code = ctx.groups.coordinator_error(group_id)
        if not code and not ctx.authorizer.group_allowed(Operation.DESCRIBE, group_id):
            code = ErrorCode.group_authorization_failed
        group = ctx.groups.streams_group(group_id)
        message = None
        if switched_off(ctx.features, STREAMS_VERSION):
            code, message = ErrorCode.unsupported_version, OFF_MESSAGE
        elif not code and isinstance(group, NotFound):
            code, message = ErrorCode.group_id_not_found, group.message
        if code or isinstance(group, NotFound):
            described.append(make(nested(cls, "DescribedGroup"), error_code=code, error_message=message,
                                  group_id=group_id, group_state="", group_epoch=-1, assignment_epoch=-1,
                                  topology=None, members=(), authorized_operations=UNKNOWN_OPERATIONS))
            continue
        described.append(_describe(cls, group))
    return make(cls, throttle_time=NO_THROTTLE, groups=tuple(described))


def _describe(cls: Any, group: StreamsGroup) -> Any:
    task_cls, assignment_cls, kv_cls = nested(cls, "TaskIds"), nested(cls, "Assignment"), nested(cls, "KeyValue")

    def task_ids(tasks: TaskMap) -> tuple[Any, ...]:
        return tuple(make(task_cls, subtopology_id=s, partitions=tuple(sorted(ps))) for s, ps in sorted(tasks.items()))

    def assignment(tasks: Tasks) -> Any:
        return make(assignment_cls, active_tasks=task_ids(tasks.active), standby_tasks=task_ids(tasks.standby),
                    warmup_tasks=task_ids(tasks.warmup))

    def offsets(reported: Mapping[tuple[str, int], int]) -> tuple[Any, ...]:
        return tuple(make(nested(cls, "TaskOffset"), subtopology_id=s, partition=p, offset=o)
                     for (s, p), o in sorted(reported.items()))

    members = []
    for m in group.members.values():
        md = m.metadata
        endpoint = None if md.user_endpoint is None else make(nested(cls, "Endpoint"), host=md.user_endpoint[0],
                                                               port=md.user_endpoint[1])
        members.append(make(
            nested(cls, "Member"), member_id=m.member_id, member_epoch=m.current.epoch, instance_id=md.instance_id,
            rack_id=md.rack_id, client_id=md.client_id, client_host=md.client_host, topology_epoch=md.topology_epoch,
            process_id=md.process_id, user_endpoint=endpoint,
            client_tags=tuple(make(kv_cls, key=k, value=v) for k, v in md.client_tags),
            task_offsets=offsets(m.task_offsets), task_end_offsets=offsets(m.task_end_offsets),
            assignment=assignment(m.current.assigned),
            target_assignment=assignment(group.targets.get(m.member_id, Tasks())),
            is_classic=False))
    return make(nested(cls, "DescribedGroup"), error_code=ErrorCode.none, error_message=None, group_id=group.group_id,
                group_state=group.state.value, group_epoch=group.epoch, assignment_epoch=group.assignment_epoch,
                topology=_topology(cls, group), members=tuple(members), authorized_operations=UNKNOWN_OPERATIONS)


def _topology(cls: Any, group: StreamsGroup) -> Any:
    """The topology with its internal topics' partition counts as configured (0 until known)."""
    if group.topology is None:
        return None
    info_cls, kv_cls = nested(cls, "TopicInfo"), nested(cls, "KeyValue")
    counts = group.configured.partitions if group.configured is not None else {}

    def info(t: TopicInfo) -> Any:
        return make(info_cls, name=t.name, partitions=counts.get(t.name, t.partitions),
                    replication_factor=t.replication_factor,
                    topic_configs=tuple(make(kv_cls, key=k, value=v) for k, v in t.configs))

    subs = tuple(make(nested(cls, "Subtopology"), subtopology_id=s.subtopology_id, source_topics=s.source_topics,
                      repartition_sink_topics=s.repartition_sink_topics,
                      state_changelog_topics=tuple(info(t) for t in s.changelog_topics),
                      repartition_source_topics=tuple(info(t) for t in s.repartition_source_topics))
                 for s in group.topology.subtopologies)
    return make(nested(cls, "Topology"), epoch=group.topology.epoch, subtopologies=subs)
