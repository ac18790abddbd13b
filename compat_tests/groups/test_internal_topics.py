"""Internal topics belong to the broker (issue 13 item 1).

`__consumer_offsets` holds every group's committed offsets as records only the broker writes.
Checked against a real broker process, restarted where the claim is about what start-up replays:
- Produce to it is refused as Kafka's ReplicaManager refuses it (INVALID_TOPIC_EXCEPTION,
  "Cannot append to internal topic ..."), whatever the batch holds: nothing is stored, and a
  record forged with the offsets schemas changes no group's offset after a restart.
- DeleteTopics and CreatePartitions on it are refused (Kafka's own tools refuse both) unless the
  operator starts the broker with --allow-internal-topic-changes.
- A batch that replay cannot read (here a CRC-valid one whose record claims 16,777,215 bytes,
  written through the storage engine while the broker is stopped, as the produce path used to
  store it) is skipped with one log line: the broker starts and every other offset is kept.
"""

from __future__ import annotations

import time
import uuid

from broker.groups import offsets_log
from broker.groups.committed_offset import CommittedOffset
from broker.settings.config_from_settings import config_with
from broker.storage.modes import StorageModes
from broker.topics import TopicRegistry
from compat_tests.helpers.raw_kafka import Client, make_batch, recrc
from compat_tests.helpers.topics import unique_topic
from wire.batch_builder import build_batch

OFFSETS = "__consumer_offsets"
PARTITIONS = 3
ARGS = ("--offsets-topic-partitions", str(PARTITIONS))
ALLOW = "--allow-internal-topic-changes"
NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION = 0, 3, 17
ZERO_UUID = uuid.UUID(int=0)


def commit(client: Client, group: str, topic: str, offset: int) -> None:
    """OffsetCommit v9 outside any generation (an admin's or an assign() consumer's commit)."""
    r = client.request(8, 9, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                       group_instance_id=None, topics=[{"name": topic, "partitions": [
                           {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
                            "committed_metadata": ""}]}])
    assert [p.error_code for t in r.topics for p in t.partitions] == [NONE], r


def committed(client: Client, group: str, topic: str) -> int:
    r = client.request(9, 7, group_id=group, topics=[{"name": topic, "partition_indexes": [0]}],
                       require_stable=False)
    (t,) = r.topics
    (p,) = t.partitions
    assert (r.error_code, p.error_code) == (NONE, NONE), r
    return p.committed_offset


def huge_record_batch() -> bytes:
    """A CRC-valid batch whose one record's length varint claims 16,777,215 bytes (16 follow)."""
    batch = bytearray(make_batch([b"x" * 16]))
    records = bytes([0xFE, 0xFF, 0xFF, 0x0F]) + bytes(16)  # zigzag varint of 16,777,215
    batch[61:] = records
    batch[8:12] = (len(batch) - 12).to_bytes(4, "big")
    return recrc(bytes(batch))


def forged_commit(group: str, topic: str, offset: int) -> bytes:
    """One record with Kafka's offset-commit key and value schemas, as a client could send it."""
    value = offsets_log.offset_value(CommittedOffset(offset, -1, "", int(time.time() * 1000)))
    return make_batch([value], keys=[offsets_log.offset_key(group, topic, 0)])


def group_in(partition: int, prefix: str) -> str:
    """A new group id whose records go to `partition` of __consumer_offsets."""
    while True:
        group = f"{prefix}-{uuid.uuid4().hex[:8]}"
        if offsets_log.partition_for(group, PARTITIONS) == partition:
            return group


def offsets_partitions(client: Client) -> int | None:
    (t,) = client.metadata([OFFSETS]).topics
    return len(t.partitions) if t.error_code == NONE else None


def test_produce_to_internal_topic_is_refused(broker_factory):
    broker = broker_factory(*ARGS)
    topic = unique_topic("victim-topic")
    with Client.to(broker) as c:
        c.create_topic(topic)
        commit(c, "victim", topic, 50)
        partition = offsets_log.partition_for("victim", PARTITIONS)
        end = c.log_end_offset(OFFSETS, partition)
        for batch in (forged_commit("victim", topic, 3), huge_record_batch()):
            r = c.produce(OFFSETS, partition, batch)
            assert (r.error_code, r.error_message, r.base_offset) == (
                INVALID_TOPIC_EXCEPTION, "Cannot append to internal topic __consumer_offsets", -1)
        assert c.log_end_offset(OFFSETS, partition) == end, "a refused batch was stored"
    broker.restart()
    with Client.to(broker) as c:
        assert committed(c, "victim", topic) == 50
        assert c.log_end_offset(OFFSETS, partition) == end


def _delete(client: Client, version: int, name: str | None = None, topic_id: uuid.UUID | None = None):
    if version < 6:
        r = client.request(20, version, topic_names=[name], timeout=10_000)
    else:
        r = client.request(20, version, timeout=10_000,
                           topics=[{"name": name, "topic_id": topic_id or ZERO_UUID}])
    (result,) = r.responses
    return result


def _grow(client: Client, count: int, validate_only: bool = False):
    r = client.request(37, 3, topics=[{"name": OFFSETS, "count": count, "assignments": None}],
                       timeout=10_000, validate_only=validate_only)
    (result,) = r.results
    return result


def test_delete_and_create_partitions_of_internal_topic_are_refused(broker_factory):
    broker = broker_factory(*ARGS)
    topic = unique_topic("victim-topic")
    with Client.to(broker) as c:
        c.create_topic(topic)
        commit(c, "victim", topic, 50)
        (meta,) = c.metadata([OFFSETS]).topics
        assert _delete(c, 1, OFFSETS).error_code == INVALID_TOPIC_EXCEPTION  # v1 carries no message
        for result in (_delete(c, 6, OFFSETS), _delete(c, 6, topic_id=meta.topic_id)):
            assert result.error_code == INVALID_TOPIC_EXCEPTION, result
            assert "not allowed to be deleted" in result.error_message and ALLOW in result.error_message
        for validate_only in (True, False):
            result = _grow(c, PARTITIONS + 2, validate_only)
            assert result.error_code == INVALID_TOPIC_EXCEPTION, result
            assert "not allowed to be given more partitions" in result.error_message
        assert offsets_partitions(c) == PARTITIONS
    broker.restart()
    with Client.to(broker) as c:
        assert committed(c, "victim", topic) == 50
        assert offsets_partitions(c) == PARTITIONS


def test_operator_flag_allows_internal_topic_changes_but_not_produce(broker_factory):
    broker = broker_factory(*ARGS, ALLOW)
    topic = unique_topic("victim-topic")
    with Client.to(broker) as c:
        c.create_topic(topic)
        commit(c, "victim", topic, 50)
        assert _grow(c, PARTITIONS + 1).error_code == NONE
        assert offsets_partitions(c) == PARTITIONS + 1
        r = c.produce(OFFSETS, 0, forged_commit("victim", topic, 3))
        assert r.error_code == INVALID_TOPIC_EXCEPTION, r
        assert _delete(c, 6, OFFSETS).error_code == NONE
        assert offsets_partitions(c) is None
    broker.restart()
    with Client.to(broker) as c:
        assert committed(c, "victim", topic) == -1  # what the flag allows: the offsets are gone


def append_while_stopped(broker, partition: int, batch: bytes) -> int:
    """Append through the broker's own storage engine while the broker is stopped, below every
    check of the produce path (which now refuses such a batch twice over: internal topic, and
    a record it cannot read) — as an older broker stored it; returns the batch's base offset."""
    storage = StorageModes(broker.data_dir, broker.storage_mode)
    topics = TopicRegistry(config_with(data_dir=broker.data_dir, storage_mode=broker.storage_mode), storage)
    topics.load()
    try:
        buf = bytearray(batch)
        # the log the registry opened (a store hands out one log per partition), not its Partition
        config = topics.partition(OFFSETS, partition).config
        partition_log = storage.store(broker.storage_mode).open_partition(OFFSETS, partition, config)
        return partition_log.append(buf, 0, int(time.time() * 1000)).first_offset
    finally:
        storage.close()


def test_unreadable_offsets_batch_is_skipped_at_start(broker_factory):
    broker = broker_factory(*ARGS)
    topic = unique_topic("victim-topic")
    poisoned = offsets_log.partition_for("victim", PARTITIONS)
    other = group_in((poisoned + 1) % PARTITIONS, "other")
    after = group_in(poisoned, "after")
    with Client.to(broker) as c:
        c.create_topic(topic)
        commit(c, "victim", topic, 50)
        commit(c, other, topic, 70)
    broker.stop()
    bad_offset = append_while_stopped(broker, poisoned, huge_record_batch())
    # A commit behind the bad batch in the same partition, encoded as offsets_store writes one.
    value = offsets_log.offset_value(CommittedOffset(60, -1, "", int(time.time() * 1000)))
    append_while_stopped(broker, poisoned, bytes(build_batch([(offsets_log.offset_key(after, topic, 0), value)],
                                                            int(time.time() * 1000))))
    mark = broker.log_size()
    broker.start()
    with Client.to(broker) as c:
        assert committed(c, "victim", topic) == 50
        assert committed(c, other, topic) == 70
        assert committed(c, after, topic) == 60
    said = broker.log_text(since=mark)
    skip = [line for line in said.splitlines() if "skipping unreadable __consumer_offsets" in line]
    assert len(skip) == 1 and f"in partition {poisoned} at offsets {bad_offset}-{bad_offset}:" in skip[0], said
    assert "16777215 bytes" in skip[0] and "Traceback" not in said, said
