"""Produce v3+: validate each partition's batch, append it, answer per partition.

Each partition stands alone: a corrupt or oversize batch, an unknown
partition or a fenced producer fails only that partition and stores nothing
for it. A transaction's first batch in a partition is first verified with its
coordinator (produce_verification.py). Every record is read before anything is
appended (produce_records.py: framing as Kafka's LogValidator, compressed batches that inflate far in a worker
thread), but never re-encoded: offsets are assigned in the header. A batch with records
the topic's configs refuse (no key on a compacted topic, a timestamp outside
message.timestamp.before/after.max.ms) fails with each record's batch index and reason
(record_errors, v8+) and Kafka's error_message (replica/record_checks.py).
When the batch brings its partition to flush.messages (every batch at 1;
flush_messages.py) the partition is fsynced (group commit) before it becomes
visible and is acknowledged: the appends happen now, in request order, and the
answer is a Deferred that waits for the fsync, so the connection can append the
requests pipelined behind this one meanwhile and one fsync covers them all.
With acks=all the answer also waits until the high watermark passes the batch
(replica/partition.py), and a partition whose ISR is smaller than
min.insync.replicas refuses the batch (NOT_ENOUGH_REPLICAS) before appending.
v10+ tell a producer answered NOT_LEADER_OR_FOLLOWER where the leader is (KIP-951,
current_leader.py); v13 names topics by id (KIP-516): an id no topic here has is
UNKNOWN_TOPIC_ID. v12 is v11 on the wire, sent by clients of transactions V2 (KIP-890): a
transaction's first batch in a partition has the leader add the partition to the transaction
rather than verify it (produce_verification.py).
One request may name thousands of partitions: every WORK_SLICE_S of checking or appending,
other connections get the event loop (one Produce of 5,000 partitions held it 0.3-1.3 s).
The connection serves its next request only after this one, so its batches keep their order;
what was appended is published and committed (dispatch.py) only after the last batch.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
import uuid

from segment.log import StorageError
from wire.protocol import response_for
from wire.record_batch import BatchTooLarge, InvalidBatch, InvalidRecord, validate_produced

from broker.security.acl.checks import denied_names, transactional_id_allowed
from broker.security.acl.model import Operation, ResourceType
from broker.dispatch_types import Deferred
from broker.handlers.current_leader import PRODUCE_HINT_ERRORS, PRODUCE_HINT_VERSION, leader_field, leader_hint, \
    node_endpoints
from broker.handlers.produce_records import PendingBatch, check_batches
from broker.handlers.produce_verification import verify_first_batches
from replica.partition_errors import PartitionError
from replica.record_checks import RecordsRejected
from replica.producer_state import OutOfOrderSequence, ProducerFenced
from broker.topic_names import INTERNAL_TOPICS
from broker.handlers.response_builder import NO_THROTTLE, error, make, nested

log = logging.getLogger(__name__)

WORK_SLICE_S = 0.005
NO_TOPIC_ID = uuid.UUID(int=0)
PRODUCE_BY_TOPIC_ID = 13  # KIP-516: v13 names topics by id


def _topic_key(broker, topic_data) -> str | uuid.UUID:
    """The topic's name; for v13+, which name topics by id, the id itself when no topic here has it."""
    if not hasattr(topic_data, "topic_id"):
        return topic_data.name
    topic = broker.topics.get_by_id(topic_data.topic_id)
    return topic.name if topic is not None else topic_data.topic_id


def _admit(broker, topic_name: str, index: int, records, txn_id_authorized: bool):
    """The checks before a batch's records are read: (partition, PendingBatch) or an error
    (name, message)."""
    if topic_name in INTERNAL_TOPICS:
        # As Kafka's ReplicaManager: these records are the group coordinator's state, written by
        # the broker alone (offsets_store appends to the partition directly). A client's record
        # would be replayed at start-up as a commit of any group it names.
        return "invalid_topic_exception", f"Cannot append to internal topic {topic_name}"
    partition = broker.topics.partition(topic_name, index)
    if partition is None:
        return broker.topics.missing_partition_error(topic_name, index), None
    if partition.read_only:
        return "invalid_topic_exception", f"{topic_name} is a read-only key-lookup topic"
    if not records:
        return "invalid_record", "Produce v3+ needs one record batch per partition"
    try:
        header = validate_produced(records, partition.config.max_message_bytes)
    except BatchTooLarge as exc:
        return "message_too_large", str(exc)
    except InvalidRecord as exc:
        log.info("rejecting batch for %s-%d: %s", topic_name, index, exc)
        return "invalid_record", str(exc)
    except InvalidBatch as exc:
        log.info("rejecting batch for %s-%d: %s", topic_name, index, exc)
        return "corrupt_message", str(exc)
    if header.is_transactional and not header.has_producer_id:  # Kafka's LogValidator
        return "invalid_record", "a transactional batch needs a producer id"
    if header.is_transactional and not txn_id_authorized:
        # Kafka authorizes a transactional batch by WRITE on the request's transactional id
        # (checked in handle); a request naming none has nothing to authorize it.
        return "transactional_id_authorization_failed", "a transactional batch needs an authorized transactional id"
    return partition, PendingBatch(records, header, partition.wants_record_keys)


def _append_one(broker, topic_name: str, index: int, partition, pending: PendingBatch, acks: int, verified):
    """Returns (error name, info or None, message or None, partition or None, record errors)."""
    if pending.error is not None:
        code, message = pending.error
        log.info("rejecting batch for %s-%d: %s", topic_name, index, message)
        return code, None, message, None, ()
    records, header = pending.records, pending.header
    try:
        broker.storage_health.claim(len(records), f"{topic_name}-{index}")
        info, _duplicate = partition.append_as_leader(bytearray(records), header, acks, pending.keys,
                                                      verified=verified)
    except RecordsRejected as exc:  # records the topic's configs refuse, each named by its index
        return exc.code, None, str(exc), None, exc.record_errors
    except PartitionError as exc:  # not the leader; too few in-sync replicas for acks=all
        return exc.code, None, str(exc), None, ()
    except ProducerFenced as exc:
        return "invalid_producer_epoch", None, str(exc), None, ()
    except OutOfOrderSequence as exc:
        return "out_of_order_sequence_number", None, str(exc), None, ()
    except StorageError as exc:  # nothing of the batch is stored (WriteRefused) or the log is offline
        broker.storage_health.warn("refusing batch for %s-%d: %s", topic_name, index, exc)
        return "kafka_storage_error", None, str(exc), None, ()
    return "none", info, None, partition, ()


async def handle(broker, header, request):
    txn_id = request.transactional_id
    if txn_id is not None:
        txn_id_authorized = transactional_id_allowed(broker, Operation.WRITE, txn_id)
    else:
        txn_id_authorized = broker.acls is None  # without an authorizer nothing is checked
    code_for_all = None if txn_id is None or txn_id_authorized else "transactional_id_authorization_failed"
    results = []
    admitted = []  # (result position, partition, PendingBatch) of each batch to check and append
    topics = [(_topic_key(broker, t), t) for t in request.topic_data]
    unwritable = denied_names(broker, Operation.WRITE, ResourceType.TOPIC,
                              (name for name, _ in topics if isinstance(name, str)))
    slice_started = time.monotonic()
    for name, topic in topics:
        for pd in topic.partition_data:
            if time.monotonic() - slice_started >= WORK_SLICE_S:
                await asyncio.sleep(0)
                slice_started = time.monotonic()
            if code_for_all is not None:
                results.append((name, pd.index, code_for_all, None, "Transactional Id authorization failed.", ()))
                continue
            if not isinstance(name, str):
                results.append((name, pd.index, "unknown_topic_id", None, None, ()))
                continue
            if name in unwritable:  # ACLs: WRITE on the topic, as Kafka's handleProduceRequest
                results.append((name, pd.index, "topic_authorization_failed", None, None, ()))
                continue
            outcome, detail = _admit(broker, name, pd.index, pd.records, txn_id_authorized)
            if isinstance(detail, PendingBatch):
                admitted.append((len(results), name, pd.index, outcome, detail))
                results.append(None)
            else:
                results.append((name, pd.index, outcome, None, detail, ()))
    await check_batches([pending for *_, pending in admitted])
    verified = await verify_first_batches(broker, txn_id, admitted, header.api_version)
    appended = []  # (result position, partition, offset the HW must reach) of each stored batch
    messages: dict[int, int] = {}  # id(partition) -> messages this request appended to it
    slice_started = time.monotonic()
    for i, name, index, partition, pending in admitted:
        if time.monotonic() - slice_started >= WORK_SLICE_S:
            await asyncio.sleep(0)
            slice_started = time.monotonic()
        code, info, message, stored, record_errors = _append_one(broker, name, index, partition, pending,
                                                                 request.acks, verified.get(i))
        if stored is not None:
            appended.append((i, stored, info.last_offset + 1))
            messages[id(stored)] = messages.get(id(stored), 0) + info.last_offset - info.first_offset + 1
        results[i] = (name, index, code, info, message, record_errors)
    touched = {id(p): p for _, p, _ in appended}
    durable = [p for key, p in touched.items() if broker.flush_by_count.appended(p, messages[key])]
    synced = {id(p) for p in durable}
    for key, p in touched.items():
        if key not in synced:
            p.publish()
    answer = None if request.acks == 0 else (header, results)
    replicated = [(i, p, end) for i, p, end in appended if p.high_watermark < end] if request.acks == -1 else []
    if durable or replicated:
        return Deferred(_complete(broker, durable, appended if request.acks == -1 else [],
                                  request.timeout.total_seconds(), answer))
    if answer is None:
        return None
    return _response(broker, header, results)


async def _complete(broker, durable, appended, timeout_s, answer):
    """The second half of a produce that waits: for the fsyncs (flush.messages reached), then, with
    acks=all, for the high watermark to pass each batch (its followers have it).

    A partition whose fsync failed publishes nothing and answers KAFKA_STORAGE_ERROR: its log
    is offline, and what the fsync should have covered is not acknowledged. One that stopped
    leading answers NOT_LEADER_OR_FOLLOWER; one whose HW did not get there in the request's
    timeout, REQUEST_TIMED_OUT; one whose ISR shrank below min.insync.replicas meanwhile,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND, as Kafka's delayed produce."""
    covered = await asyncio.gather(*(broker.durable(p) for p in durable), return_exceptions=True)
    failed = {}
    for p, upto in zip(durable, covered):
        if isinstance(upto, StorageError):
            failed[id(p)] = ("kafka_storage_error", str(upto))
        elif isinstance(upto, BaseException):
            raise upto
        else:
            p.publish(upto)
    waiting = [(i, p, end) for i, p, end in appended if id(p) not in failed]
    codes = await asyncio.gather(*(p.wait_for_replication(end, timeout_s) for _, p, end in waiting))
    if answer is None:
        return None
    header, results = answer
    errors = {i: failed[id(p)] for i, p, _ in appended if id(p) in failed}
    errors.update((i, (code, None)) for (i, _, _), code in zip(waiting, codes) if code != "none")
    for i, (code, message) in errors.items():
        name, index = results[i][:2]
        results[i] = (name, index, code, None, message, ())
    return _response(broker, header, results)


def _append_time(info):
    """kio types log_append_time as a nullable datetime: None is Kafka's -1 (CreateTime)."""
    if info is None or info.log_append_time < 0:
        return None
    return datetime.datetime.fromtimestamp(info.log_append_time / 1000, tz=datetime.timezone.utc)


def _topic_id(broker, key):
    """v13's topic id of a result: its topic's, or the request's own id (unknown here, or null)."""
    if not isinstance(key, str):
        return key
    topic = broker.topics.get(key)
    return topic.topic_id if topic is not None else NO_TOPIC_ID


def _response(broker, header, results):
    cls = response_for(header)
    topic_cls = nested(cls, "TopicProduceResponse")
    part_cls = nested(cls, "PartitionProduceResponse")
    error_cls = nested(cls, "BatchIndexAndErrorMessage")
    hint_leaders = header.api_version >= PRODUCE_HINT_VERSION
    hints = []
    by_topic: dict[str | uuid.UUID, list] = {}
    for name, index, code, info, message, record_errors in results:
        hint = None
        if hint_leaders and code in PRODUCE_HINT_ERRORS:
            hint = leader_hint(broker, name, index, broker.topics.partition(name, index))
            hints.append(hint)
        by_topic.setdefault(name, []).append(
            make(part_cls, index=index, error_code=error(code),
                 base_offset=info.first_offset if info else -1,
                 log_append_time=_append_time(info),
                 log_start_offset=info.log_start_offset if info else -1,
                 record_errors=tuple(make(error_cls, batch_index=e.batch_index, batch_index_error_message=e.message)
                                     for e in record_errors) if error_cls is not None else (),
                 error_message=message, current_leader=leader_field(cls, hint))
        )
    by_id = header.api_version >= PRODUCE_BY_TOPIC_ID  # older versions' names may be anything, null too
    topics = tuple(make(topic_cls, name=name, topic_id=_topic_id(broker, name) if by_id else None,
                        partition_responses=tuple(parts))
                   for name, parts in by_topic.items())
    return make(cls, responses=topics, throttle_time=NO_THROTTLE, node_endpoints=node_endpoints(broker, cls, hints))
