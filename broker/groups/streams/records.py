"""Streams groups as records of `__consumer_offsets`, in Kafka 4.3's record types.

Keys are the consumer groups' (consumer/records.py: int16 type | string group_id (| string
member_id), non-flexible); values int16 version=0 then a flexible body with a tagged-field
section after every struct. Task lists are [subtopology_id string | [] int32 partitions].

    type 17 StreamsGroupMetadata        key group           value int32 epoch | int64 metadata_hash
                                                                  | int32 validated_topology_epoch
    type 19 StreamsGroupMemberMetadata  key group | member  value instance_id? | rack_id? | client_id
                                                                  | client_host | int32 rebalance_timeout
                                                                  | int32 topology_epoch | process_id
                                                                  | endpoint? (host | uint16 port)
                                                                  | [] (key | value) client tags
    type 20 StreamsGroupTargetAssignmentMetadata key group  value int32 assignment_epoch
    type 21 StreamsGroupTargetAssignmentMember key group | member  value active | standby | warm-up
    type 22 StreamsGroupCurrentMemberAssignment key group | member value int32 epoch | int32 previous
                                                                  | int8 state | active | standby
                                                                  | warm-up | the three pending revocation
    type 23 StreamsGroupTopology        key group           value int32 epoch | [] subtopology (id
                                                                  | [] source | [] regex | [] changelog
                                                                  | [] repartition sink | [] repartition
                                                                  source | [] copartition groups)

Kafka's schemas were read from its sources, not checked against a log Kafka wrote. The metadata
hash is written 0: this coordinator configures the topology again at every heartbeat instead.
"""

from __future__ import annotations

from wire.field_codec import FieldReader, FieldWriter

from broker.groups.offsets_log import BadRecord
from broker.groups.consumer.reconciliation import MemberState
from broker.groups.streams.reconciliation import CurrentTasks
from broker.groups.streams.streams_group import MemberMetadata
from broker.groups.streams.tasks import KINDS, Tasks
from broker.groups.streams.topology import Subtopology, TopicInfo, Topology

GROUP_METADATA, MEMBER_METADATA, TARGET_METADATA = 17, 19, 20
TARGET_MEMBER, CURRENT_ASSIGNMENT, TOPOLOGY = 21, 22, 23
MEMBER_KEYED = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
TYPES = frozenset({GROUP_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, TOPOLOGY})
VALUE_VERSION = 0


def key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    w = FieldWriter().i16(record_type).nullable_string(group_id)
    return (w if member_id is None else w.nullable_string(member_id)).value()


def key_type(raw: bytes) -> int:
    return FieldReader(raw, BadRecord).i16()


def decode_key(raw: bytes) -> tuple[int, str, str | None]:
    r = FieldReader(raw, BadRecord)
    record_type = r.i16()
    if record_type not in TYPES:
        raise BadRecord(f"not a streams group record type: {record_type}")
    group_id = r.string()
    return record_type, group_id, r.string() if record_type in MEMBER_KEYED else None


# --- values --------------------------------------------------------------------------------------

def group_metadata_value(epoch: int, validated_topology_epoch: int) -> bytes:
    return _writer().i32(epoch).i64(0).i32(validated_topology_epoch).tagged_fields().value()


def decode_group_metadata(raw: bytes) -> tuple[int, int]:
    r = _reader(raw)
    epoch, _hash, validated = r.i32(), r.i64(), r.i32()
    r.tagged_fields()
    return epoch, validated


def epoch_value(epoch: int) -> bytes:
    return _writer().i32(epoch).tagged_fields().value()


def decode_epoch(raw: bytes) -> int:
    r = _reader(raw)
    epoch = r.i32()
    r.tagged_fields()
    return epoch


def member_metadata_value(m: MemberMetadata) -> bytes:
    w = _writer()
    text = w.compact_nullable_string
    text(m.instance_id), text(m.rack_id), text(m.client_id), text(m.client_host)
    w.i32(m.rebalance_timeout_ms).i32(m.topology_epoch)
    text(m.process_id)
    if m.user_endpoint is None:
        w.i8(-1)
    else:
        w.i8(1)
        text(m.user_endpoint[0]).raw(m.user_endpoint[1].to_bytes(2, "big")).tagged_fields()  # uint16 port
    w.array(list(m.client_tags), lambda kv: text(kv[0]).compact_nullable_string(kv[1]).tagged_fields(), True)
    return w.tagged_fields().value()


def decode_member_metadata(raw: bytes) -> MemberMetadata:
    r = _reader(raw)
    text = r.compact_nullable_string
    instance_id, rack_id, client_id, client_host = text(), text(), text() or "", text() or ""
    rebalance_timeout, topology_epoch, process_id = r.i32(), r.i32(), text() or ""
    endpoint = None
    if r.i8() >= 0:
        endpoint = (text() or "", r.i16() & 0xFFFF)
        r.tagged_fields()
    tags = tuple(r.array(lambda: (text() or "", text() or "", r.tagged_fields())[:2], True))
    r.tagged_fields()
    return MemberMetadata(process_id, instance_id, rack_id, client_id, client_host, topology_epoch,
                          rebalance_timeout, endpoint, tags)


def tasks_value(tasks: Tasks) -> bytes:
    return _write_tasks(_writer(), tasks).tagged_fields().value()


def decode_tasks(raw: bytes) -> Tasks:
    r = _reader(raw)
    tasks = _read_tasks(r)
    r.tagged_fields()
    return tasks


def current_value(c: CurrentTasks) -> bytes:
    w = _writer().i32(c.epoch).i32(c.previous_epoch).i8(int(c.state))
    return _write_tasks(_write_tasks(w, c.assigned), c.pending_revocation).tagged_fields().value()


def decode_current(raw: bytes) -> CurrentTasks:
    r = _reader(raw)
    epoch, previous, state = r.i32(), r.i32(), MemberState.from_byte(r.i8())
    c = CurrentTasks(state, epoch, previous, _read_tasks(r), _read_tasks(r))
    r.tagged_fields()
    return c


def topology_value(t: Topology) -> bytes:
    w = _writer().i32(t.epoch)

    def info(i: TopicInfo) -> None:
        w.compact_nullable_string(i.name).i32(i.partitions).i16(i.replication_factor)
        w.array(list(i.configs), lambda kv: w.compact_nullable_string(kv[0]).compact_nullable_string(kv[1])
                .tagged_fields(), True)
        w.tagged_fields()

    def sub(s: Subtopology) -> None:
        w.compact_nullable_string(s.subtopology_id)
        w.array(list(s.source_topics), w.compact_nullable_string, True)
        w.array([], w.compact_nullable_string, True)  # source topic regexes: refused at the heartbeat
        w.array(list(s.changelog_topics), info, True)
        w.array(list(s.repartition_sink_topics), w.compact_nullable_string, True)
        w.array(list(s.repartition_source_topics), info, True)
        repartition = [r.name for r in s.repartition_source_topics]
        w.array(list(s.copartition_groups), lambda g: (
            w.array(sorted(s.source_topics.index(n) for n in g if n in s.source_topics), w.i32, True),
            w.array([], w.i32, True),
            w.array(sorted(repartition.index(n) for n in g if n in repartition and n not in s.source_topics),
                    w.i32, True),
            w.tagged_fields()), True)
        w.tagged_fields()

    w.array(list(t.subtopologies), sub, True)
    return w.tagged_fields().value()


def decode_topology(raw: bytes) -> Topology:
    r = _reader(raw)
    text = r.compact_nullable_string
    epoch = r.i32()

    def info() -> TopicInfo:
        name, partitions, rf = text() or "", r.i32(), r.i16()
        configs = tuple(r.array(lambda: (text() or "", text() or "", r.tagged_fields())[:2], True))
        r.tagged_fields()
        return TopicInfo(name, partitions, rf, configs)

    def sub() -> Subtopology:
        sid = text() or ""
        sources = tuple(r.array(text, True))
        r.array(text, True)
        changelogs = tuple(r.array(info, True))
        sinks = tuple(r.array(text, True))
        repartition = tuple(r.array(info, True))

        def group() -> frozenset[str]:
            names = [sources[i] for i in r.array(r.i32, True) if 0 <= i < len(sources)]
            r.array(r.i32, True)
            names += [repartition[i].name for i in r.array(r.i32, True) if 0 <= i < len(repartition)]
            r.tagged_fields()
            return frozenset(names)

        groups = tuple(r.array(group, True))
        r.tagged_fields()
        return Subtopology(sid, sources, sinks, changelogs, repartition, groups)

    subs = tuple(r.array(sub, True))
    r.tagged_fields()
    return Topology(epoch, subs)


# --- the flexible encoding -------------------------------------------------------------------------

def _writer() -> FieldWriter:
    return FieldWriter().i16(VALUE_VERSION)


def _reader(raw: bytes) -> FieldReader:
    r = FieldReader(raw, BadRecord)
    if r.i16() != VALUE_VERSION:
        raise BadRecord("streams group value version is not one this broker reads")
    return r


def _write_tasks(w: FieldWriter, tasks: Tasks) -> FieldWriter:
    for kind in KINDS:
        w.array(sorted(tasks.of(kind).items()),
                lambda kv: w.compact_nullable_string(kv[0]).array(sorted(kv[1]), w.i32, True).tagged_fields(), True)
    return w


def _read_tasks(r: FieldReader) -> Tasks:
    def one() -> tuple[str, frozenset[int]]:
        pair = r.compact_nullable_string() or "", frozenset(r.array(r.i32, True))
        r.tagged_fields()
        return pair

    return Tasks(*({s: ps for s, ps in r.array(one, True) if ps} for _ in KINDS))
