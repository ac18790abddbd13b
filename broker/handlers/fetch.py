"""Fetch v4-v18: whole batches as file regions, with long polling.

v13+ name topics by topic id (KIP-516): an id this broker does not know is answered
UNKNOWN_TOPIC_ID (a key-lookup topic's id is known once its name was served, key_topic.py),
and the response names topics by id too. v15+ carry the follower's id in
replica_state (KIP-903; the epoch beside it is KRaft's broker epoch, which a broker on etcd
has no use for), v17 the follower's log directory (KIP-853, one per layout here: ignored).
v16+ tell a client answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH where the leader
is (KIP-951, current_leader.py). v18's follower high watermark (KIP-1166: a leader may complete
a follower's parked fetch when its HW is behind) is read and ignored: followers here fetch
with v12, and a consumer leaves it at its "not supported" default.

A Fetch from a follower (replica_id >= 0) reads up to the log end offset and tells the
leader how far that follower got (its fetch offset), which is what moves the high
watermark; consumers read up to the high watermark (the partition's FetchIsolation,
replica/readable_partition.py). Only the leader answers.

Limits, as KIP-74 has them: partitions are filled in request order up to the
response's max_bytes, each to its partition_max_bytes; the first batch of the
first partition with data is returned whole even when larger, so a consumer
always progresses, and later partitions never overrun the limit. The request
waits up to max_wait for min_bytes to accumulate, waking when any of its
partitions gets an append. Followers fetch in incremental fetch sessions (KIP-227,
broker/fetch_sessions.py): their request and its answer name only the partitions that
changed, while every partition of the session is read. Consumers get no session: every
answer to them says session 0, which clients read as "send full requests".
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from typing import Any

from replica.readable_partition import FetchIsolation, ReadablePartition
from segment.storage_errors import OffsetOutOfRange, StorageError
from wire.follower_fetch_response import VERSION as FOLLOWER_FETCH_VERSION, follower_fetch_response
from wire.error_codes import ErrorCode
from wire.protocol import RecordRegions, RequestHeader, fetch_replica_id, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.api.topic_lookup import TopicLookup
from broker.cluster.view import ClusterView
from broker.api.access_checks import AccessChecks
from broker.security.acl.model import Operation, ResourceType
from broker.handlers.current_leader import FETCH_HINT_ERRORS, FETCH_HINT_VERSION, LeaderHint, leader_hint, \
    leader_field, node_endpoints
from broker.api.response_builder import NO_THROTTLE, make, nested
from broker.fetch_sessions import FetchContext, PartitionKey

DEBUGGING_REPLICA_ID = -2  # Kafka's FetchRequest.DEBUGGING_CONSUMER_ID
READ_SLICE_S = 0.005

# One requested topic: (its key in the request and the session: its name, from v13 its id; its name,
# None for an id unknown here; its id, None for a name unknown here; its kio partition requests).
Wanted = tuple[str | uuid.UUID, str | None, uuid.UUID | None, list[Any]]
# One partition read: (index, error, the partition hosted here, its record regions, the aborted
# transactions a read_committed consumer is told of, None for others).
PartitionRead = tuple[int, ErrorCode, ReadablePartition | None, list[Any], list[Any] | None]
TopicReads = tuple[str | uuid.UUID, str | None, uuid.UUID | None, list[PartitionRead]]
# What the answer tells of a partition: PartitionRead and its HW, LSO and log start offset.
Answered = tuple[int, ErrorCode, ReadablePartition | None, list[Any], list[Any] | None, int, int, int]


def _requested(request: Request) -> dict[PartitionKey, object]:
    """The requested partitions, each once: {(topic name, or topic id from v13, index): partition
    request}. Kafka reads a fetch request into a map keyed by topic-partition, so a partition
    named twice is fetched once, at the position its last mention asks for, in the order of its
    first mention (a small request naming one partition 200 times made the broker read it 200
    times)."""
    by_tp: dict[PartitionKey, object] = {}
    for ft in request.topics:
        key = ft.topic_id if hasattr(ft, "topic_id") else ft.topic
        for fp in ft.partitions:
            by_tp[(key, fp.partition)] = fp
    return by_tp


def _forgotten(request: Request) -> list[PartitionKey]:
    """The partitions an incremental request drops from its session (v7+)."""
    return [(ft.topic_id if hasattr(ft, "topic_id") else ft.topic, index)
            for ft in getattr(request, "forgotten_topics_data", None) or () for index in ft.partitions]


def _grouped(topics: TopicLookup, by_tp: dict[PartitionKey, object]) -> list[Wanted]:
    """The requested topics in the order of each one's first partition."""
    grouped: dict[str | uuid.UUID, list[Any]] = {}
    for (key, _), fp in by_tp.items():
        grouped.setdefault(key, []).append(fp)
    out: list[Wanted] = []
    for key, fps in grouped.items():
        if isinstance(key, str):
            topic = topics.get(key)
            out.append((key, key, topic.topic_id if topic is not None else None, fps))
        else:
            topic = topics.get_by_id(key)
            out.append((key, topic.name if topic is not None else None, key, fps))
    return out


async def _read_partitions(topics: TopicLookup, authorizer: AccessChecks, request: Request,
                           wanted: list[Wanted], max_bytes: int) -> tuple[list[TopicReads], int]:
    """One pass over the requested partitions: each topic's reads, and the bytes read.

    Each read is bounded (the engines' reads cost little per partition), but a request may
    name thousands of partitions: every READ_SLICE_S of reading, other connections get the
    event loop."""
    remaining = max_bytes
    total = 0
    out: list[TopicReads] = []
    slice_started = time.monotonic()
    follower = fetch_replica_id(request)
    unreadable = _unreadable(authorizer, follower, wanted)
    isolation = FetchIsolation.of(follower, request.isolation_level)
    for key, topic, topic_id, fps in wanted:
        if topic is None:
            out.append((key, topic, topic_id,
                        [(fp.partition, ErrorCode.unknown_topic_id, None, [], None) for fp in fps]))
            continue
        if topic in unreadable:
            out.append((key, topic, topic_id,
                        [(fp.partition, ErrorCode.topic_authorization_failed, None, [], None) for fp in fps]))
            continue
        parts: list[PartitionRead] = []
        for fp in fps:
            if time.monotonic() - slice_started >= READ_SLICE_S:
                await asyncio.sleep(0)
                slice_started = time.monotonic()
            partition = topics.partition(topic, fp.partition)
            if partition is None:
                parts.append((fp.partition, topics.missing_partition_error(topic, fp.partition), None, [], None))
                continue
            fenced = partition.epoch_error(getattr(fp, "current_leader_epoch", -1))
            if fenced is not None:
                parts.append((fp.partition, fenced, partition, [], None))
                continue
            if not partition.is_leader and follower != DEBUGGING_REPLICA_ID:
                # only leaders serve fetches (no KIP-392 follower reads); Kafka's debugging
                # consumer id reads any replica, up to its high watermark
                parts.append((fp.partition, ErrorCode.not_leader_or_follower, partition, [], None))
                continue
            if follower >= 0:
                partition.follower_fetched(follower, fp.fetch_offset)
            limit = min(fp.partition_max_bytes, remaining)
            if total and limit <= 0:
                parts.append((fp.partition, ErrorCode.none, partition, [], None))
                continue
            try:
                regions = partition.read(fp.fetch_offset, max(limit, 1), isolation)
            except OffsetOutOfRange:
                parts.append((fp.partition, ErrorCode.offset_out_of_range, partition, [], None))
                continue
            except StorageError:  # the log is offline (LogOffline): Kafka answers the same
                parts.append((fp.partition, ErrorCode.kafka_storage_error, partition, [], None))
                continue
            size = sum(r.size if hasattr(r, "size") else len(r) for r in regions)  # bytes: key lookups
            if total and size > limit:
                regions, size = [], 0  # only the response's first batch may overrun
            total += size
            remaining -= size
            aborted = None
            if isolation is FetchIsolation.TXN_COMMITTED:  # Kafka: a list (maybe empty) for read_committed
                aborted = partition.aborted_transactions(fp.fetch_offset, partition.last_stable_offset) \
                    if regions else []
            parts.append((fp.partition, ErrorCode.none, partition, regions, aborted))
        out.append((key, topic, topic_id, parts))
    return out, total


def _unreadable(authorizer: AccessChecks, follower: int, wanted: list[Wanted]) -> frozenset[str]:
    """ACLs, as Kafka's handleFetchRequest: a follower needs CLUSTER_ACTION on the cluster (else
    every topic fails), a consumer READ on each topic."""
    if not authorizer.enabled:
        return frozenset()
    names = [topic for _, topic, _, _ in wanted if topic is not None]
    if follower >= 0:
        return frozenset() if authorizer.cluster_allowed(Operation.CLUSTER_ACTION) else frozenset(names)
    return authorizer.denied_names(Operation.READ, ResourceType.TOPIC, names)


async def _wait_for_data(topics: TopicLookup, wanted: list[Wanted], timeout: float, follower: bool) -> None:
    fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    partitions = [
        p for _, topic, _, fps in wanted if topic is not None for fp in fps
        if (p := topics.partition(topic, fp.partition)) is not None
    ]
    for p in partitions:
        p.add_waiter(fut, follower)
    try:
        # asyncio.wait, not wait_for: 3.11's wait_for loses a cancel that arrives as the future
        # completes (with followers long-polling that happens), and the connection's task then
        # outlives its connection and blocks the broker's shutdown.
        await asyncio.wait((fut,), timeout=timeout)
    finally:
        fut.cancel()
        for p in partitions:
            p.discard_waiter(fut)


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    topics, replicas = ctx.topics, ctx.replicas
    cls = response_for(header)
    follower = fetch_replica_id(request)
    context = replicas.fetch_context(request, follower, _requested(request), _forgotten(request))
    if isinstance(context, ErrorCode):  # a session error: nothing read, nothing answered but it
        return make(cls, throttle_time=NO_THROTTLE, error_code=context, session_id=0, responses=())
    deadline = time.monotonic() + request.max_wait.total_seconds()
    wanted = _grouped(topics, context.partitions)
    consumer = follower < 0  # consumers have quotas, followers none
    # Kafka's fetch.max.bytes: a client's max_bytes (2^31-1 is legal) never makes one response,
    # and the reads behind it, larger than the broker allows; nor, for a consumer, larger than
    # its consumer_byte_rate lets through in one window (enforcement.py), min_bytes with it.
    max_bytes: int = min(request.max_bytes, ctx.config.fetch_max_bytes)
    quota_limit = replicas.consumer_fetch_limit(header) if consumer else None
    if quota_limit is not None:
        max_bytes = min(max_bytes, quota_limit)
    min_bytes = min(request.min_bytes, max_bytes)
    while True:
        results, total = await _read_partitions(topics, ctx.authorizer, request, wanted, max_bytes)
        has_error = any(code is not ErrorCode.none for _, _, _, parts in results for _, code, *_ in parts)
        left = deadline - time.monotonic()
        if total >= min_bytes or has_error or left <= 0:
            break
        await _wait_for_data(topics, wanted, left, not consumer)
    if consumer:
        throttle_ms = replicas.consumer_fetch_throttle(header, total)  # its byte rate and its request time
        if throttle_ms:  # answered empty, as Kafka's throttled response (enforcement.py)
            return make(cls, throttle_time=datetime.timedelta(milliseconds=throttle_ms), error_code=ErrorCode.none,
                        session_id=0, responses=(), node_endpoints=node_endpoints(ctx.view, cls, []))
    return _response(ctx.view, header, cls, results, context, not consumer)


def _answered(results: list[TopicReads],
              context: FetchContext) -> list[tuple[str | None, uuid.UUID | None, list[Answered]]]:
    """The partitions the answer names, with the offsets it tells: [(topic name, topic id,
    [(index, code, partition, regions, aborted, HW, LSO, log start)])]; an incremental answer
    leaves out the partitions (and topics) that did not change."""
    out: list[tuple[str | None, uuid.UUID | None, list[Answered]]] = []
    for key, name, topic_id, parts in results:
        answered: list[Answered] = []
        for index, code, partition, regions, aborted in parts:
            hw = partition.high_watermark if partition else -1
            lso = partition.last_stable_offset if partition else -1
            start = partition.log_start_offset if partition else -1
            if context.answers((key, index), code, hw, lso, start, bool(regions)):
                answered.append((index, code, partition, regions, aborted, hw, lso, start))
        if answered or not context.incremental:
            out.append((name, topic_id, answered))
    return out


def _response(view: ClusterView, header: RequestHeader, cls: type, results: list[TopicReads], context: FetchContext,
              follower: bool) -> Answer:
    answered = _answered(results, context)
    if follower and header.api_version == FOLLOWER_FETCH_VERSION:  # what twinlog's followers send
        return follower_fetch_response(context.session_id, [
            (name, [(index, code, hw, lso, start, regions)
                    for index, code, _, regions, _, hw, lso, start in parts])
            for name, _, parts in answered if name is not None])  # v12 names topics by name: never None
    topic_cls = nested(cls, "FetchableTopicResponse")
    part_cls = nested(cls, "PartitionData")
    aborted_cls = nested(cls, "AbortedTransaction")  # Fetch v4+
    hint_leaders = header.api_version >= FETCH_HINT_VERSION
    hints: list[LeaderHint] = []
    topics = []
    for name, topic_id, parts in answered:
        datas = []
        for index, code, partition, regions, aborted, hw, lso, start in parts:
            hint = None
            if hint_leaders and code in FETCH_HINT_ERRORS and name is not None:  # an unknown id has no leader
                hint = leader_hint(view, name, index, partition)
                hints.append(hint)
            datas.append(make(part_cls, partition_index=index, error_code=code, high_watermark=hw,
                              last_stable_offset=lso, log_start_offset=start,
                              aborted_transactions=_aborted(aborted_cls, aborted),
                              current_leader=leader_field(cls, hint),
                              preferred_read_replica=-1, records=RecordRegions(regions)))
        topics.append(make(topic_cls, topic=name, topic_id=topic_id, partitions=tuple(datas)))
    return make(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, session_id=context.session_id,
                responses=tuple(topics), node_endpoints=node_endpoints(view, cls, hints))


def _aborted(aborted_cls: type | None, aborted: list[Any] | None) -> tuple[Any, ...] | None:
    if aborted is None or aborted_cls is None:
        return None
    return tuple(make(aborted_cls, producer_id=t.producer_id, first_offset=t.first_offset) for t in aborted)
