"""Produce v3+: validate each partition's batch, append it, answer per partition.

Each partition stands alone: a corrupt or oversize batch, an unknown
partition or a fenced producer fails only that partition and stores nothing
for it. A transaction's first batch in a partition is first verified with its
coordinator (produce_verification.py). Every record is read before anything is
appended (produce_records.py: framing as Kafka's LogValidator, compressed batches that inflate far in a worker
thread), but never re-encoded: offsets are assigned in the header. Only a topic whose
compression.type names another codec than the batch's has it compressed again in that codec. A batch with records
the topic's configs refuse (no key on a compacted topic, a timestamp outside
message.timestamp.before/after.max.ms) fails with each record's batch index and reason
(record_errors, v8+) and Kafka's error_message (replica/record_checks.py).
What this handler checks is the request's: ACLs, internal topics, the batches' framing.
The rest is the broker's one write path (replica/write_path.py): the leader appends, now and in
request order; the flush policy (with flush.messages=1 every batch is fsynced, one group commit
for the whole request, before it becomes visible and is acknowledged); publishing the high
watermark; with acks=all the wait until the HW passes the batch, and NOT_ENOUGH_REPLICAS before
appending when the ISR is smaller than min.insync.replicas. An answer that must wait is a
Deferred, so the connection can append the requests pipelined behind this one meanwhile and one
fsync covers them all.
v10+ tell a producer answered NOT_LEADER_OR_FOLLOWER where the leader is (KIP-951,
current_leader.py); v13 names topics by id (KIP-516): an id no topic here has is
UNKNOWN_TOPIC_ID. v12 is v11 on the wire, sent by clients of transactions V2 (KIP-890): a
transaction's first batch in a partition has the leader add the partition to the transaction
rather than verify it (produce_verification.py).
One request may name thousands of partitions: every WORK_SLICE_S of checking or appending,
other connections get the event loop (one Produce of 5,000 partitions held it 0.3-1.3 s).
The connection serves its next request only after this one, so its batches keep their order;
what was appended is committed to the files (dispatch.py) before any answer.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
import uuid
from typing import Any

from replica.partition import Partition
from replica.record_checks import RecordError
from segment.log import AppendInfo
from wire.error_codes import ErrorCode
from wire.produce_response import PartitionAnswer, ProduceBody, encode_produce_response
from wire.protocol import RequestHeader, response_for
from wire.record_batch import BatchTooLarge, InvalidBatch, InvalidRecord, validate_produced

from broker.api.context import Answer, ApiContext, Request
from broker.api.topic_lookup import TopicLookup
from broker.cluster.view import ClusterView
from broker.security.acl.model import Operation, ResourceType
from broker.api.deferred import Deferred
from broker.handlers.current_leader import PRODUCE_HINT_ERRORS, PRODUCE_HINT_VERSION, LeaderHint, leader_field, \
    leader_hint, node_endpoints
from broker.handlers.produce_records import PendingBatch, check_batches, rewrite_for
from broker.handlers.produce_verification import Admitted, verify_first_batches
from replica.write_path import WORK_SLICE_S, PendingWrites, RecordsWrite, WriteResult
from broker.topic_names import INTERNAL_TOPICS
from broker.api.response_builder import NO_THROTTLE, make, nested

log = logging.getLogger(__name__)
NO_TOPIC_ID = uuid.UUID(int=0)
PRODUCE_BY_TOPIC_ID = 13  # KIP-516: v13 names topics by id

TopicKey = str | uuid.UUID  # a topic's name; a v13+ topic id no topic here has
# One partition's answer: (topic, index, error, where it was stored, error message, record errors).
Result = tuple[TopicKey, int, ErrorCode, AppendInfo | None, str | None, tuple[RecordError, ...]]
_UNFILLED: Result = ("", -1, ErrorCode.unknown_server_error, None, None, ())  # until checked and appended
Refusal = tuple[ErrorCode, str | None]


def _topic_key(topics: TopicLookup, topic_data: Any) -> TopicKey:
    """The topic's name; for v13+, which name topics by id, the id itself when no topic here has it."""
    if not hasattr(topic_data, "topic_id"):
        name: str = topic_data.name
        return name
    topic_id: uuid.UUID = topic_data.topic_id
    topic = topics.get_by_id(topic_id)
    return topic.name if topic is not None else topic_id


def _admit(topics: TopicLookup, topic_name: str, index: int, records: bytes | None,
           txn_id_authorized: bool) -> tuple[Partition, PendingBatch] | Refusal:
    """The checks before a batch's records are read: (partition, PendingBatch) or an error
    (code, message)."""
    if topic_name in INTERNAL_TOPICS:
        # As Kafka's ReplicaManager: these records are the group coordinator's state, written by
        # the broker alone (offsets_store appends through the write path). A client's record
        # would be replayed at start-up as a commit of any group it names.
        return ErrorCode.invalid_topic_exception, f"Cannot append to internal topic {topic_name}"
    partition = topics.partition(topic_name, index)
    if partition is None:
        return topics.missing_partition_error(topic_name, index), None
    if not isinstance(partition, Partition):  # a read-only view (readable_partition.py), which owns no log
        return ErrorCode.invalid_topic_exception, f"{topic_name} is a read-only key-lookup topic"
    if not records:
        return ErrorCode.invalid_record, "Produce v3+ needs one record batch per partition"
    try:
        header = validate_produced(records, partition.config.max_message_bytes)
    except BatchTooLarge as exc:
        return ErrorCode.message_too_large, str(exc)
    except InvalidRecord as exc:
        log.info("rejecting batch for %s-%d: %s", topic_name, index, exc)
        return ErrorCode.invalid_record, str(exc)
    except InvalidBatch as exc:
        log.info("rejecting batch for %s-%d: %s", topic_name, index, exc)
        return ErrorCode.corrupt_message, str(exc)
    if header.is_transactional and not header.has_producer_id:  # Kafka's LogValidator
        return ErrorCode.invalid_record, "a transactional batch needs a producer id"
    if header.is_transactional and not txn_id_authorized:
        # Kafka authorizes a transactional batch by WRITE on the request's transactional id
        # (checked in handle); a request naming none has nothing to authorize it.
        return ErrorCode.transactional_id_authorization_failed, "a transactional batch needs an authorized transactional id"
    return partition, PendingBatch(records, header, partition.wants_record_keys,
                                   rewrite=rewrite_for(partition.config, header, topic_name, index))


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    topics = ctx.topics
    txn_id: str | None = request.transactional_id
    if txn_id is not None:
        txn_id_authorized = ctx.authorizer.transactional_id_allowed(Operation.WRITE, txn_id)
    else:
        txn_id_authorized = not ctx.authorizer.enabled  # without an authorizer nothing is checked
    code_for_all = None if txn_id is None or txn_id_authorized else ErrorCode.transactional_id_authorization_failed
    results: list[Result] = []
    admitted: list[Admitted] = []  # each batch to check and append, by its result's position
    requested = [(_topic_key(topics, t), t) for t in request.topic_data]
    unwritable = ctx.authorizer.denied_names(Operation.WRITE, ResourceType.TOPIC,
                                             (name for name, _ in requested if isinstance(name, str)))
    slice_started = time.monotonic()
    for name, topic in requested:
        for pd in topic.partition_data:
            if time.monotonic() - slice_started >= WORK_SLICE_S:
                await asyncio.sleep(0)
                slice_started = time.monotonic()
            if code_for_all is not None:
                results.append((name, pd.index, code_for_all, None, "Transactional Id authorization failed.", ()))
                continue
            if not isinstance(name, str):
                results.append((name, pd.index, ErrorCode.unknown_topic_id, None, None, ()))
                continue
            if name in unwritable:  # ACLs: WRITE on the topic, as Kafka's handleProduceRequest
                results.append((name, pd.index, ErrorCode.topic_authorization_failed, None, None, ()))
                continue
            admission = _admit(topics, name, pd.index, pd.records, txn_id_authorized)
            if isinstance(admission[1], PendingBatch):
                partition, pending = admission
                admitted.append((len(results), name, pd.index, partition, pending))
                results.append(_UNFILLED)
            else:
                code, message = admission
                results.append((name, pd.index, code, None, message, ()))
    await check_batches([pending for *_, pending in admitted])
    verified = await verify_first_batches(ctx.transactions, txn_id, admitted, header.api_version)
    writes: list[RecordsWrite] = []  # the batches to store
    positions: list[tuple[int, str, int]] = []  # (result position, topic, index) of each
    for i, name, index, partition, pending in admitted:
        if pending.error is not None:
            code, message = pending.error
            log.info("rejecting batch for %s-%d: %s", name, index, message)
            results[i] = (name, index, code, None, message, ())
            continue
        positions.append((i, name, index))
        writes.append(RecordsWrite(partition, bytearray(pending.records), pending.header, pending.walked,
                                   verified=verified.get(i)))
    appended = await ctx.replicas.append(writes, request.acks)
    _fill(results, positions, appended.results)
    answer = None if request.acks == 0 else (header, results)
    if appended.waits:
        return Deferred(_complete(ctx.view, topics, appended, positions, request.timeout.total_seconds(), answer))
    if answer is None:
        return None
    return _response(ctx.view, topics, header, results)


async def _complete(view: ClusterView, topics: TopicLookup, appended: PendingWrites,
                    positions: list[tuple[int, str, int]], timeout_s: float,
                    answer: tuple[RequestHeader, list[Result]] | None) -> Answer:
    """The second half of a produce that waits (write_path.py): for the fsyncs flush.messages
    asks for, then, with acks=all, for the high watermark to pass each batch."""
    written = await appended.completed(timeout_s)
    if answer is None:
        return None
    header, results = answer
    _fill(results, positions, written)
    return _response(view, topics, header, results)


def _fill(results: list[Result], positions: list[tuple[int, str, int]], written: list[WriteResult]) -> None:
    for (i, name, index), result in zip(positions, written):
        results[i] = (name, index, result.error, result.info if result.ok else None, result.message,
                      result.record_errors)


def _append_time(info: AppendInfo | None) -> datetime.datetime | None:
    """kio types log_append_time as a nullable datetime: None is Kafka's -1 (CreateTime)."""
    if info is None or info.log_append_time < 0:
        return None
    return datetime.datetime.fromtimestamp(info.log_append_time / 1000, tz=datetime.timezone.utc)


def _topic_id(topics: TopicLookup, key: TopicKey) -> uuid.UUID:
    """v13's topic id of a result: its topic's, or the request's own id (unknown here, or null)."""
    if not isinstance(key, str):
        return key
    topic = topics.get(key)
    return topic.topic_id if topic is not None else NO_TOPIC_ID


def _response(view: ClusterView, topics: TopicLookup, header: RequestHeader, results: list[Result]) -> Answer:
    hint_leaders = header.api_version >= PRODUCE_HINT_VERSION
    if not (hint_leaders and any(code in PRODUCE_HINT_ERRORS for _, _, code, *_ in results)):
        return _encoded(topics, header, results)  # no leader to name: straight to bytes
    cls = response_for(header)
    topic_cls = nested(cls, "TopicProduceResponse")
    part_cls = nested(cls, "PartitionProduceResponse")
    error_cls = nested(cls, "BatchIndexAndErrorMessage")
    hints: list[LeaderHint] = []
    by_topic: dict[TopicKey, list[Any]] = {}
    for name, index, code, info, message, record_errors in results:
        hint = None
        if hint_leaders and code in PRODUCE_HINT_ERRORS and isinstance(name, str):  # an unknown id has no leader
            hint = leader_hint(view, name, index, topics.partition(name, index))
            hints.append(hint)
        by_topic.setdefault(name, []).append(
            make(part_cls, index=index, error_code=code,
                 base_offset=info.first_offset if info else -1,
                 log_append_time=_append_time(info),
                 log_start_offset=info.log_start_offset if info else -1,
                 record_errors=tuple(make(error_cls, batch_index=e.batch_index, batch_index_error_message=e.message)
                                     for e in record_errors) if error_cls is not None else (),
                 error_message=message, current_leader=leader_field(cls, hint))
        )
    by_id = header.api_version >= PRODUCE_BY_TOPIC_ID  # older versions' names may be anything, null too
    answered = tuple(make(topic_cls, name=name, topic_id=_topic_id(topics, name) if by_id else None,
                          partition_responses=tuple(parts))
                     for name, parts in by_topic.items())
    return make(cls, responses=answered, throttle_time=NO_THROTTLE, node_endpoints=node_endpoints(view, cls, hints))


def _encoded(topics: TopicLookup, header: RequestHeader, results: list[Result]) -> ProduceBody:
    """An answer that names no leader, written straight to bytes (wire/produce_response.py): the
    fields of the entity above, and each refused partition for the metrics."""
    by_id = header.api_version >= PRODUCE_BY_TOPIC_ID
    by_topic: dict[TopicKey, list[PartitionAnswer]] = {}
    failed: list[tuple[str | None, int, ErrorCode]] = []
    for name, index, code, info, message, record_errors in results:
        appended_at = info.log_append_time if info is not None and info.log_append_time >= 0 else -1
        by_topic.setdefault(name, []).append(PartitionAnswer(
            index, code.value, info.first_offset if info else -1, appended_at,
            info.log_start_offset if info else -1, [(e.batch_index, e.message) for e in record_errors], message))
        if code is not ErrorCode.none:
            failed.append((name if isinstance(name, str) else None, index, code))  # an unknown id: no name
    return encode_produce_response(header.api_version, [(_topic_id(topics, name) if by_id else name, answers)
                                                        for name, answers in by_topic.items()], failed)
