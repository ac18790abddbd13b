"""ShareFetch (KIP-932) v1-v2: a share group member's fetch. It acknowledges what it carries
(piggy-backed AcknowledgementBatches), keeps the member's share session (share_sessions.py) and
acquires records from every partition the session holds, long-polling up to max_wait when none
may be acquired yet (woken by an append, a lock running out, or records released).

Records go out as stored, whole batches (file regions), each partition's with the AcquiredRecords
ranges the member owns and their delivery counts; the client hands out only those offsets. A
batch none of whose records could be acquired is left out. max_records bounds the records
acquired over the whole fetch, rounded up to whole batches (Kafka's batch-optimized mode), or
exactly with v2's record-limit ShareAcquireMode (KIP-1206; the client hands out only the
acquired offsets of a batch); the state (delivery counts) is written before the answer
(share_partitions.py). v2's RENEW acknowledgements (KIP-1222) start the locks of held records
again; a request with IsRenewAck set only acknowledges: it acquires nothing and does not wait,
as Kafka answers it.

Errors as Kafka's: SHARE_SESSION_NOT_FOUND / INVALID_SHARE_SESSION_EPOCH at the top level;
INVALID_REQUEST for acknowledgements in a request opening a session; UNKNOWN_MEMBER_ID for a
session opened by a member its group does not have (when this broker coordinates the group); per partition UNKNOWN_TOPIC_ID,
NOT_LEADER_OR_FOLLOWER (with the leader, KIP-951), and, for acknowledgements,
INVALID_RECORD_STATE. Epoch -1 (a closing member's last request) acknowledges, closes the
session and releases what the member still holds there; it fetches nothing. A session opened
here belongs to this connection: its close ends the session too (share_sessions.py).
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from wire.error_codes import ErrorCode
from replica.partition import now_ms
from segment.storage_errors import OffsetOutOfRange, StorageError
from wire.protocol import RecordRegions, RequestHeader, response_for
from replica.readable_partition import ReadablePartition

from broker.api.context import Answer, ApiContext, Request
from broker.api.share_group_service import ShareGroupService
from broker.api.topic_lookup import TopicLookup
from broker.cluster.view import ClusterView
from broker.groups.share.share_partition import AcquiredRange
from broker.groups.share.share_sessions import CLOSE_EPOCH, OPEN_EPOCH, SessionRefused, TopicPartition
from broker.groups.share.state_persister import ShareStateUnavailable
from broker.security.acl.model import Operation
from broker.handlers.current_leader import LeaderHint, node_endpoints
from broker.features import OFF_MESSAGE, SHARE_VERSION, switched_off
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.handlers.share_partition_access import acknowledge, hint, leader, target, unreadable_topics
from broker.net.request_context import current_request

BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1  # v2's ShareAcquireMode


@dataclass
class _Partition:
    code: ErrorCode = ErrorCode.none
    message: str | None = None
    ack_code: ErrorCode = ErrorCode.none
    ack_message: str | None = None
    regions: list[Any] = field(default_factory=list)  # file regions (or bytes) of whole batches
    ranges: list[AcquiredRange] = field(default_factory=list)
    topic: str | None = None
    partition: ReadablePartition | None = None


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    cls = response_for(header)
    shares = ctx.share_groups
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    if switched_off(ctx.features, SHARE_VERSION):
        return _top(shares, cls, group_id, ErrorCode.unsupported_version, OFF_MESSAGE)
    if not group_id or not member_id:
        return _top(shares, cls, group_id, ErrorCode.invalid_request, "GroupId and MemberId must be set.")
    if not ctx.authorizer.group_allowed(Operation.READ, group_id):
        return _top(shares, cls, group_id, ErrorCode.group_authorization_failed, None)
    has_acks = any(p.acknowledgement_batches for t in request.topics for p in t.partitions)
    if epoch == OPEN_EPOCH and has_acks:
        return _top(shares, cls, group_id, ErrorCode.invalid_request, "Acknowledgements are not allowed when opening a share session.")
    mode = getattr(request, "share_acquire_mode", BATCH_OPTIMIZED)
    if mode not in (BATCH_OPTIMIZED, RECORD_LIMIT):
        return _top(shares, cls, group_id, ErrorCode.invalid_request, f"Unknown ShareAcquireMode {mode}.")
    if epoch == OPEN_EPOCH and shares.is_unknown_member(group_id, member_id):
        return _top(shares, cls, group_id, ErrorCode.unknown_member_id, f"Member {member_id} is not a member of share group {group_id}.")
    try:
        context = current_request.get()
        session = shares.session_for_fetch(group_id, member_id, epoch,
                                           context.connection_id if context is not None else None)
    except SessionRefused as exc:
        return _top(shares, cls, group_id, exc.error, str(exc))
    requested: list[TopicPartition] = [(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions]
    unreadable = unreadable_topics(ctx.topics, ctx.authorizer, {tid for tid, _ in requested + session.partitions})
    results: dict[TopicPartition, _Partition] = {tp: _Partition() for tp in requested}
    for t in request.topics:
        for p in t.partitions:
            if p.acknowledgement_batches:
                out = results[(t.topic_id, p.partition_index)]
                out.ack_code, out.ack_message = await acknowledge(
                    shares, ctx.topics, group_id, member_id, t.topic_id, p.partition_index, p.acknowledgement_batches,
                    unreadable, header.api_version)
    if epoch == CLOSE_EPOCH:
        await shares.close_session(session)
        return _response(shares, ctx.view, cls, group_id, results, set(requested))
    session.update(requested, [(t.topic_id, i) for t in request.forgotten_topics_data for i in t.partitions])
    if getattr(request, "is_renew_ack", False):  # renewing locks, not asking for more
        return _response(shares, ctx.view, cls, group_id, results, set(requested))
    deadline = time.monotonic() + request.max_wait.total_seconds()
    max_bytes = min(request.max_bytes, ctx.config.fetch_max_bytes)
    while True:
        acquired = await _acquire_all(shares, ctx.topics, group_id, member_id, session.partitions, unreadable,
                                      results, max(request.max_records, 1), max_bytes, mode == RECORD_LIMIT)
        failed = any(r.code is not ErrorCode.none for r in results.values())
        left = deadline - time.monotonic()
        if acquired or failed or left <= 0:
            break
        await _wait(shares, ctx.topics, group_id, session.partitions, left)
    for (topic_id, index), out in results.items():
        if out.ranges:
            try:
                await shares.persist((group_id, topic_id, index))
            except ShareStateUnavailable as exc:  # delivery counts not kept: nothing handed out (the locks run out)
                out.code, out.message, out.regions, out.ranges = exc.error, str(exc), [], []
    return _response(shares, ctx.view, cls, group_id, results, set(requested))


async def _acquire_all(shares: ShareGroupService, topics: TopicLookup, group_id: str, member_id: str,
                       partitions: list[TopicPartition], unreadable: frozenset[str],
                       results: dict[TopicPartition, _Partition], max_records: int, max_bytes: int,
                       record_limit: bool) -> bool:
    records = size = 0
    for topic_id, index in partitions:
        out = results.setdefault((topic_id, index), _Partition())
        found = target(topics, topic_id, index, unreadable)
        out.topic, out.partition = found.topic, found.partition
        if found.error is not ErrorCode.none or found.partition is None:
            out.code = found.error
            continue
        if records >= max_records or size >= max_bytes:
            continue
        key = (group_id, topic_id, index)
        try:
            await shares.load(key, found.partition)
        except ShareStateUnavailable as exc:
            out.code, out.message = exc.error, str(exc)
            continue
        try:
            got = shares.acquire(key, found.partition, member_id, max_records - records, max_bytes - size, now_ms(),
                                 record_limit)
        except (OffsetOutOfRange, StorageError) as exc:
            out.code, out.message = ErrorCode.kafka_storage_error, str(exc) or type(exc).__name__
            continue
        out.regions.extend(got.regions)
        out.ranges.extend(got.ranges)
        records += got.records
        size += got.size
    return records > 0


async def _wait(shares: ShareGroupService, topics: TopicLookup, group_id: str, partitions: list[TopicPartition],
                left: float) -> None:
    """Until an append to one of the partitions, records released, a lock deadline, or `left` s."""
    fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    logs = [p for topic_id, index in partitions if (t := topics.get_by_id(topic_id)) is not None
            and (p := topics.partition(t.name, index)) is not None]
    next_lock = shares.next_deadline_ms([(group_id, tid, i) for tid, i in partitions])
    if next_lock is not None:
        left = min(left, max((next_lock - now_ms()) / 1000, 0.001))
    for p in logs:
        p.add_waiter(fut)
    shares.add_waiter(fut)
    try:
        await asyncio.wait((fut,), timeout=left)
    finally:
        fut.cancel()
        shares.discard_waiter(fut)
        for p in logs:
            p.discard_waiter(fut)


def _response(shares: ShareGroupService, view: ClusterView, cls: type, group_id: str,
              results: dict[TopicPartition, _Partition], named: set[TopicPartition]) -> Answer:
    topic_cls, part_cls = nested(cls, "ShareFetchableTopicResponse"), nested(cls, "PartitionData")
    acquired_cls = nested(cls, "AcquiredRecords")
    by_topic: dict[uuid.UUID, list[Any]] = {}
    hints: list[LeaderHint] = []
    for (topic_id, index), out in results.items():
        if (topic_id, index) not in named and out.code is ErrorCode.none and not out.ranges:
            continue  # a session partition with nothing to say: left out, as in incremental fetches
        h = hint(view, out.code, out.topic, index, out.partition)
        if h is not None:
            hints.append(h)
        by_topic.setdefault(topic_id, []).append(make(
            part_cls, partition_index=index, error_code=out.code, error_message=out.message,
            acknowledge_error_code=out.ack_code, acknowledge_error_message=out.ack_message,
            current_leader=leader(cls, h), records=RecordRegions(out.regions),
            acquired_records=tuple(make(acquired_cls, first_offset=r.first, last_offset=r.last,
                                        delivery_count=r.delivery_count) for r in out.ranges)))
    topics = tuple(make(topic_cls, topic_id=tid, partitions=tuple(parts)) for tid, parts in by_topic.items())
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None,
                acquisition_lock_timeout=_lock_timeout(shares, group_id), responses=topics,
                node_endpoints=node_endpoints(view, cls, hints))


def _lock_timeout(shares: ShareGroupService, group_id: str) -> datetime.timedelta:
    """The group's share.record.lock.duration.ms: how long the member holds what it got."""
    return datetime.timedelta(milliseconds=shares.config_of(group_id).lock_ms)


def _top(shares: ShareGroupService, cls: type, group_id: str, code: ErrorCode, message: str | None) -> Answer:
    return make(cls, throttle_time=NO_THROTTLE, error_code=code, error_message=message,
                acquisition_lock_timeout=_lock_timeout(shares, group_id), responses=(), node_endpoints=())
