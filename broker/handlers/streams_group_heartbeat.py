"""StreamsGroupHeartbeat (KIP-1071) v0: join, heartbeat and leave a streams group; the answer
carries the member's epoch, its tasks when they changed, the topology's statuses and, when the
member's view is behind, which partitions each user endpoint serves.

ACLs as Kafka's handleStreamsGroupHeartbeat, before the request's own checks: READ on the group,
DESCRIBE on the topics a joining member's topology reads and writes. The internal topics the topology needs are created here,
after the heartbeat, as Kafka's KafkaApis does (CREATE on the cluster or on each topic; without
it the status says so); the answer still carries MISSING_INTERNAL_TOPICS, and the next heartbeat
finds them.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any, Iterable, Mapping

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.topic_admin_service import TopicAdmin
from broker.features import OFF_MESSAGE, STREAMS_VERSION, switched_off
from broker.net.client_address import client_host
from broker.groups.streams.heartbeat_request import InvalidHeartbeat, StreamsHeartbeat, check
from broker.groups.streams.coordinator import StreamsHeartbeatResult
from broker.groups.streams.tasks import TaskMap, Tasks
from broker.groups.streams.topology import MISSING_INTERNAL_TOPICS, Subtopology, TopicInfo, Topology
from broker.security.acl.model import Operation, ResourceType
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.topic_names import TopicError

log = logging.getLogger(__name__)

# The acceptable recovery lag and task offset interval every answer carries: the values Kafka
# 4.3's coordinator sends (docs/streams-groups.md: its assignor makes no warm-up tasks, the one
# use of the lag; the group config for it came after 4.3).
ACCEPTABLE_RECOVERY_LAG = 10_000
TASK_OFFSET_INTERVAL = datetime.timedelta(milliseconds=60_000)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    if switched_off(ctx.features, STREAMS_VERSION):
        return _error(cls, ErrorCode.unsupported_version, OFF_MESSAGE)
    owned_lists = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
    topology = None if request.topology is None else _topology(request.topology)
    req = StreamsHeartbeat(
        group_id=request.group_id, member_id=request.member_id, member_epoch=request.member_epoch,
        endpoint_information_epoch=request.endpoint_information_epoch, instance_id=request.instance_id,
        rack_id=request.rack_id, rebalance_timeout_ms=_ms(request.rebalance_timeout), topology=topology,
        owned=None if any(t is None for t in owned_lists) else Tasks(*(_tasks(t) for t in owned_lists)),
        process_id=request.process_id,
        user_endpoint=None if request.user_endpoint is None else (request.user_endpoint.host,
                                                                  int(request.user_endpoint.port)),
        client_tags=None if request.client_tags is None else tuple((kv.key, kv.value) for kv in request.client_tags),
        shutdown_application=request.shutdown_application,
        task_offsets=_offsets(request.task_offsets), task_end_offsets=_offsets(request.task_end_offsets),
        client_id=header.client_id or "",
        client_host=client_host.get())
    if not ctx.authorizer.group_allowed(Operation.READ, request.group_id):
        return _error(cls, ErrorCode.group_authorization_failed, None)
    if topology is not None:
        names = {n for s in topology.subtopologies for n in (*s.source_topics, *s.repartition_sink_topics)}
        names |= {t.name for t in topology.internal_topics()}
        if ctx.authorizer.denied_names(Operation.DESCRIBE, ResourceType.TOPIC, names):
            return _error(cls, ErrorCode.topic_authorization_failed, None)
    try:
        active, standby, warmup = owned_lists
        check(req, (active is not None, standby is not None, warmup is not None),
              any(s.source_topic_regex for s in request.topology.subtopologies) if request.topology else False,
              [(t.name, t.partitions) for s in request.topology.subtopologies for t in s.state_changelog_topics]
              if request.topology else [])
    except InvalidHeartbeat as exc:
        return _error(cls, exc.error, exc.message)
    result = await ctx.groups.streams_heartbeat(req)
    if result.error is not ErrorCode.none:
        return _error(cls, result.error, result.message)
    statuses = list(result.statuses)
    if result.to_create:
        denied = [] if ctx.authorizer.cluster_allowed(Operation.CREATE) else sorted(
            ctx.authorizer.denied_names(Operation.CREATE, ResourceType.TOPIC, [t.name for t in result.to_create]))
        if denied:
            statuses.append((MISSING_INTERNAL_TOPICS, f"Unauthorized to CREATE on topics {', '.join(denied)}."))
        else:
            await _create(ctx.topic_admin, result.to_create)
    return _answer(cls, result, statuses)


async def _create(topic_admin: TopicAdmin, topics: tuple[TopicInfo, ...]) -> None:
    """The internal topics, with the counts the topology derived (a topic another request created
    meanwhile is fine: the next heartbeat checks its partition count)."""
    created = await topic_admin.create_topics([
        (t.name, t.partitions, t.replication_factor or -1, dict(t.configs), None) for t in topics])
    for name, outcome in created.items():
        if isinstance(outcome, TopicError) and outcome.code is not ErrorCode.topic_already_exists:
            log.info("streams internal topic %s not created: %s", name, outcome)


def _answer(cls: Any, result: StreamsHeartbeatResult, statuses: list[tuple[int, str]]) -> Answer:
    status_cls, task_cls = nested(cls, "Status"), nested(cls, "TaskIds")

    def task_ids(tasks: TaskMap) -> tuple[Any, ...]:
        return tuple(make(task_cls, subtopology_id=s, partitions=tuple(sorted(ps))) for s, ps in sorted(tasks.items()))

    endpoints = None
    if result.endpoints is not None:
        ep_cls, tp_cls, owner_cls = nested(cls, "Endpoint"), nested(cls, "TopicPartition"), nested(cls, "EndpointToPartitions")

        def partitions(by_topic: Mapping[str, Iterable[int]]) -> tuple[Any, ...]:
            return tuple(make(tp_cls, topic=t, partitions=tuple(sorted(ps))) for t, ps in sorted(by_topic.items()))

        endpoints = tuple(make(owner_cls, user_endpoint=make(ep_cls, host=host, port=port),
                               active_partitions=partitions(active), standby_partitions=partitions(standby))
                          for (host, port), active, standby in result.endpoints)
    tasks = result.tasks
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                member_id=result.member_id, member_epoch=result.member_epoch,
                heartbeat_interval=datetime.timedelta(milliseconds=result.heartbeat_interval_ms),
                acceptable_recovery_lag=ACCEPTABLE_RECOVERY_LAG, task_offset_interval=TASK_OFFSET_INTERVAL,
                status=tuple(make(status_cls, status_code=c, status_detail=d) for c, d in statuses) or None,
                active_tasks=None if tasks is None else task_ids(tasks.active),
                standby_tasks=None if tasks is None else task_ids(tasks.standby),
                warmup_tasks=None if tasks is None else task_ids(tasks.warmup),
                endpoint_information_epoch=result.endpoint_epoch, partitions_by_user_endpoint=endpoints)


def _error(cls: Any, code: ErrorCode, message: str | None) -> Answer:
    return make(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=message, member_id="",
                member_epoch=0, heartbeat_interval=datetime.timedelta(0), acceptable_recovery_lag=0,
                task_offset_interval=datetime.timedelta(0), status=None, active_tasks=None, standby_tasks=None,
                warmup_tasks=None, endpoint_information_epoch=0, partitions_by_user_endpoint=None)


def _topology(t: Any) -> Topology:
    """The request's topology (kio objects) as the coordinator's."""
    def info(i: Any) -> TopicInfo:
        return TopicInfo(i.name, i.partitions, i.replication_factor, tuple((kv.key, kv.value) for kv in i.topic_configs))

    def sub(s: Any) -> Subtopology:
        repartition = tuple(info(i) for i in s.repartition_source_topics)
        groups = tuple(frozenset([*(s.source_topics[i] for i in g.source_topics if 0 <= i < len(s.source_topics)),
                                  *(repartition[i].name for i in g.repartition_source_topics
                                    if 0 <= i < len(repartition))])
                       for g in s.copartition_groups)
        return Subtopology(s.subtopology_id, tuple(s.source_topics), tuple(s.repartition_sink_topics),
                           tuple(info(i) for i in s.state_changelog_topics), repartition, groups)

    return Topology(t.epoch, tuple(sorted((sub(s) for s in t.subtopologies), key=lambda s: s.subtopology_id)))


def _tasks(ids: Any) -> TaskMap:
    out: dict[str, frozenset[int]] = {}
    for t in ids:
        out[t.subtopology_id] = out.get(t.subtopology_id, frozenset()) | frozenset(t.partitions)
    return {s: ps for s, ps in out.items() if ps}


def _offsets(reported: Any) -> dict[tuple[str, int], int] | None:
    return None if reported is None else {(o.subtopology_id, o.partition): o.offset for o in reported}


def _ms(value: datetime.timedelta | int) -> int:
    return int(value.total_seconds() * 1000) if isinstance(value, datetime.timedelta) else int(value)
