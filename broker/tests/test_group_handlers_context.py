"""The group handlers are served from the context's typed services alone (issue 39): a real broker
on a temp dir, its ApiContext with the transitional `broker` field taken away, and the handlers
called as the dispatcher calls them. A classic group commits, fetches, lists and is deleted; a
KIP-848 consumer group's id is refused to a classic JoinGroup and listed with its type, the group
service choosing the coordinator each time.
"""

from __future__ import annotations

import asyncio
import datetime

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader, request_class
from broker.api.context import ApiContext
from broker.api.response_builder import nested
from broker.broker import Broker
from broker.handlers import (consumer_group_heartbeat, delete_groups, join_group, list_groups, offset_commit,
                             offset_fetch)
from broker.settings.config_from_settings import config_with

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, LIST_GROUPS, DELETE_GROUPS, CONSUMER_HEARTBEAT = 8, 9, 11, 16, 42, 68


def _header(key: int, version: int) -> RequestHeader:
    return RequestHeader(key, version, 1, "client", True)


async def _commit(ctx: ApiContext, group: str, offset: int) -> list[ErrorCode]:
    cls = request_class(OFFSET_COMMIT, 8)
    part = nested(cls, "OffsetCommitRequestPartition")(partition_index=0, committed_offset=offset,
                                                       committed_leader_epoch=-1, committed_metadata="")
    request = cls(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                  topics=(nested(cls, "OffsetCommitRequestTopic")(name="t", partitions=(part,)),))
    answer = await offset_commit.handle(ctx, _header(OFFSET_COMMIT, 8), request)
    return [p.error_code for t in answer.topics for p in t.partitions]


async def _committed(ctx: ApiContext, group: str) -> tuple[ErrorCode, int]:
    cls = request_class(OFFSET_FETCH, 8)
    wanted = nested(cls, "OffsetFetchRequestGroup")(
        group_id=group, topics=(nested(cls, "OffsetFetchRequestTopics")(name="t", partition_indexes=(0,)),))
    (answer,) = (await offset_fetch.handle(ctx, _header(OFFSET_FETCH, 8), cls(groups=(wanted,),
                                                                              require_stable=False))).groups
    (partition,) = answer.topics[0].partitions
    return answer.error_code, partition.committed_offset


async def _listed(ctx: ApiContext) -> dict[str, str]:
    cls = request_class(LIST_GROUPS, 5)
    answer = await list_groups.handle(ctx, _header(LIST_GROUPS, 5), cls(states_filter=(), types_filter=()))
    return {g.group_id: g.group_type for g in answer.groups}


async def _deleted(ctx: ApiContext, group: str) -> ErrorCode:
    cls = request_class(DELETE_GROUPS, 2)
    (result,) = (await delete_groups.handle(ctx, _header(DELETE_GROUPS, 2), cls(groups_names=(group,)))).results
    return result.error_code


async def _join_classic(ctx: ApiContext, group: str) -> ErrorCode:
    cls = request_class(JOIN_GROUP, 9)
    protocol = nested(cls, "JoinGroupRequestProtocol")(name="range", metadata=b"")
    request = cls(group_id=group, session_timeout=datetime.timedelta(seconds=10),
                  rebalance_timeout=datetime.timedelta(seconds=10), member_id="", group_instance_id=None,
                  protocol_type="connect", protocols=(protocol,), reason=None)
    return (await join_group.handle(ctx, _header(JOIN_GROUP, 9), request)).error_code


async def _join_consumer_group(ctx: ApiContext, group: str) -> ErrorCode:
    cls = request_class(CONSUMER_HEARTBEAT, 1)
    request = cls(group_id=group, member_id="member-1", member_epoch=0, instance_id=None, rack_id=None,
                  rebalance_timeout=datetime.timedelta(seconds=10), subscribed_topic_names=("t",),
                  subscribed_topic_regex=None, server_assignor=None, topic_partitions=())
    return (await consumer_group_heartbeat.handle(ctx, _header(CONSUMER_HEARTBEAT, 1), request)).error_code


def test_group_handlers_need_no_broker_object(tmp_path):
    broker = Broker(config_with(data_dir=str(tmp_path)))
    ctx = broker.api  # typed services only: ApiContext holds no Broker

    async def scenario() -> None:
        await broker.topic_admin.create_topic("t", 1, 1, {})
        assert await _commit(ctx, "classic", 42) == [ErrorCode.none]
        assert await _committed(ctx, "classic") == (ErrorCode.none, 42)
        assert await _join_consumer_group(ctx, "kip848") is ErrorCode.none
        assert await _listed(ctx) == {"classic": "classic", "kip848": "consumer"}
        # a consumer group with members holds its id: a classic JoinGroup of another protocol
        # type is refused, as Kafka's mixed groups refuse it
        assert await _join_classic(ctx, "kip848") is ErrorCode.inconsistent_group_protocol
        assert await _deleted(ctx, "classic") is ErrorCode.none
        assert await _committed(ctx, "classic") == (ErrorCode.none, -1)
        assert await _deleted(ctx, "kip848") is ErrorCode.non_empty_group

    asyncio.run(scenario())
    broker.storage.close()
