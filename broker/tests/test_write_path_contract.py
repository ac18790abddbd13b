"""The write path's contract, for every writer and both layouts (replica/write_path.py).

Every append a broker makes goes through one path: produce (acks 0, 1, all), transaction
markers (WriteTxnMarkers), committed offsets (OffsetCommit), transaction state
(InitProducerId) and share-group state. With flush.messages=1 each must:

- fsync as few times as the layout allows, counted by the engines (segment/fsync_count.py), not
  timed: one fsync of the shared commitlog for a whole request in the commitlog layout, one per
  partition file in the segment layout;
- publish the high watermark only over what a finished fsync covered;
- answer Kafka's error for a fenced producer, a partition this broker no longer leads, a log
  that went offline (what a failed fsync leaves: the engines' own offline state, entered here
  as their fsync failure enters it), a full disk (a tmpfs filled to the last page), and an
  acks=all write while the ISR is below min.insync.replicas (nothing appended).

Internal topics follow the topic's flush policy like user topics: at flush.messages=2 two
offset commits cost one fsync.

The broker is a real Broker object on real files, driven in-process through its request
dispatch (and, for share-group state, its state store), so the fsync counts are exact: nothing
else runs (no periodic flush, no snapshots).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from broker.broker import Broker
from broker.api.dispatch import dispatch
from broker.coordinator.runtime import TxnWrite
from broker.groups import offsets_log
from broker.settings.config_from_settings import config_with
from replica.partition_state import PartitionState
from segment.fsync_count import fsyncs
from wire.batch_builder import build_batch
from wire.client_codec import decode_response, encode_request
from wire.error_codes import ErrorCode
from wire.request_builder import build_request

LAYOUTS = ("segment", "commitlog")
PARTITIONS = 4
PRODUCE, OFFSET_COMMIT, INIT_PRODUCER_ID, WRITE_TXN_MARKERS = 0, 8, 22, 27
DATA_FILE = {"segment": "log", "commitlog": "commitlog"}  # the files an acknowledgement waits on


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def start(path, layout: str, **settings) -> Broker:
    broker = Broker(config_with(data_dir=str(path), storage_mode=layout, **{"flush_messages": 1, **settings}))
    await broker.topic_admin.create_topic("t", PARTITIONS, 1, {})
    return broker


async def send(broker, api_key: int, version: int, **values):
    """The request through the broker's dispatch; returns the decoded response (None for none).
    An answer that waits (a Deferred) is returned as a task making it: await `answer(task)`."""
    frame = encode_request(build_request(api_key, version, **values), 7, "contract")[4:]
    out = await dispatch(broker, frame)
    if asyncio.iscoroutine(out):
        return asyncio.ensure_future(out)
    return _decoded(out, api_key, version)


async def answer(pending, api_key: int, version: int):
    chunks, _ready = await pending
    return _decoded(chunks, api_key, version)


def _decoded(chunks, api_key: int, version: int):
    if chunks is None:
        return None
    return decode_response(b"".join(bytes(c) for c in chunks)[4:], api_key, version)


def produce_values(acks: int, batches: dict[int, bytes]) -> dict:
    return dict(transactional_id=None, acks=acks, timeout=10_000, topic_data=[
        {"name": "t", "partition_data": [{"index": i, "records": bytes(b)} for i, b in batches.items()]}])


def produce_errors(response) -> dict[int, int]:
    return {p.index: p.error_code for t in response.responses for p in t.partition_responses}


def counted(layout: str) -> int:
    return fsyncs().get(DATA_FILE[layout], 0)


def records(n: int = 1) -> bytearray:
    return build_batch([(b"k", b"v%d" % i) for i in range(n)], 0)


def markers_values(producer_id: int, epoch: int, indexes) -> dict:
    return dict(markers=[{"producer_id": producer_id, "producer_epoch": epoch, "transaction_result": True,
                          "coordinator_epoch": 0, "topics": [{"name": "t", "partition_indexes": list(indexes)}]}])


def marker_errors(response) -> dict[int, int]:
    return {i.partition_index: i.error_code for m in response.markers for t in m.topics for i in t.partitions}


def offset_commit_values(group: str) -> dict:
    return dict(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                topics=[{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                      "committed_leader_epoch": -1, "committed_metadata": ""}]}])


def offset_commit_error(response) -> int:
    (topic,) = response.topics
    (partition,) = topic.partitions
    return partition.error_code


# ----- fsyncs and the high watermark ------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("acks", [0, 1, -1])
def test_a_produce_to_many_partitions_costs_one_fsync_per_file_and_counts_only_what_it_covered(
        tmp_path, layout, acks):
    async def scenario():
        broker = await start(tmp_path, layout)
        partitions = broker.topics.get("t").partitions
        before, before_each = counted(layout), dict(fsyncs())
        pending = await send(broker, PRODUCE, 11, **produce_values(acks, {i: records(3) for i in range(PARTITIONS)}))
        # the appends are in the log, but no HW counts them before the fsync ends
        assert [p.log_end_offset for p in partitions] == [3] * PARTITIONS
        assert [p.high_watermark for p in partitions] == [0] * PARTITIONS
        response = await answer(pending, PRODUCE, 11)
        if acks != 0:
            assert produce_errors(response) == dict.fromkeys(range(PARTITIONS), 0)
        assert [p.high_watermark for p in partitions] == [3] * PARTITIONS
        assert all(p.flushed_end == 3 for p in partitions)
        # the commitlog: one fsync of the one file for the whole request; segment: one per partition
        assert counted(layout) - before == (1 if layout == "commitlog" else PARTITIONS)
        if layout == "commitlog":  # and no other file: not the partitions' new leader-epoch files
            assert grown_since(before_each) == {"commitlog": 1}
        await broker.close()

    run(scenario())


def grown_since(before: dict[str, int]) -> dict[str, int]:
    """The fsyncs counted since `before` (fsyncs() then), by kind of file."""
    return {kind: n - before.get(kind, 0) for kind, n in fsyncs().items() if n != before.get(kind, 0)}


@pytest.mark.parametrize("acks", [1, -1])
def test_a_segment_acknowledgement_fsyncs_the_log_and_its_indexes_wait_for_the_recovery_point(tmp_path, acks):
    """The indexes are derived from the log (a recovery re-derives them past the recovery
    point), so an acknowledgement waits on the `.log` fsync alone; `flush` (flush.ms, close)
    fsyncs them and only then moves the recovery point."""
    async def scenario():
        broker = await start(tmp_path, "segment", log_index_interval_bytes=1)  # an index entry a batch
        plog = broker.topics.partition("t", 0).replica_log.log
        for n in range(1, 4):
            before = dict(fsyncs())
            response = await answer(await send(broker, PRODUCE, 11, **produce_values(acks, {0: records(3)})),
                                    PRODUCE, 11)
            assert produce_errors(response) == {0: 0}
            if n > 1:  # the first append of the leader epoch also writes its checkpoint file
                assert grown_since(before) == {"log": 1}
        assert len(plog.active.index) == 2 and len(plog.active.time_index) >= 1  # written, not fsynced
        assert plog.recovery_point == 0
        before = dict(fsyncs())
        plog.flush()
        assert grown_since(before) == {"index": 1, "timeindex": 1} and plog.recovery_point == 9
        await broker.close()

    run(scenario())


async def hw_never_passes_the_fsynced_end(broker, write):
    """Await `write` while checking, at every turn of the event loop, that no partition's high
    watermark counts a record that no finished fsync covered (the flush.messages=1 rule)."""
    seen = []

    async def watch():
        while True:
            seen.extend((p.topic, p.index, p.high_watermark, p.flushed_end) for p in broker.topics.all_partitions()
                        if p.high_watermark > p.flushed_end)
            await asyncio.sleep(0)

    watcher = asyncio.ensure_future(watch())
    try:
        return await write
    finally:
        watcher.cancel()
        assert not seen, seen


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_markers_of_a_request_share_one_group_commit(tmp_path, layout):
    async def scenario():
        broker = await start(tmp_path, layout)
        batch = build_batch([(b"k", b"v")], 0, (1000, 0, 0), transactional=True)
        await answer(await send(broker, PRODUCE, 11, **produce_values(-1, {i: batch for i in range(PARTITIONS)})),
                     PRODUCE, 11)
        partitions = broker.topics.get("t").partitions
        before = counted(layout)
        response = await hw_never_passes_the_fsynced_end(
            broker, send(broker, WRITE_TXN_MARKERS, 1, **markers_values(1000, 0, range(PARTITIONS))))
        assert marker_errors(response) == dict.fromkeys(range(PARTITIONS), 0)
        assert [p.high_watermark for p in partitions] == [2] * PARTITIONS
        assert counted(layout) - before == (1 if layout == "commitlog" else PARTITIONS)
        await broker.close()

    run(scenario())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_coordinator_records_are_fsynced_before_they_count(tmp_path, layout):
    async def scenario():
        broker = await start(tmp_path, layout)
        for api_key, version, values, error in (
                (OFFSET_COMMIT, 9, offset_commit_values("g"), offset_commit_error),
                (INIT_PRODUCER_ID, 5, dict(transactional_id="tx", transaction_timeout=60_000, producer_id=-1,
                                           producer_epoch=-1), lambda r: r.error_code)):
            await send(broker, api_key, version, **values)  # creates the internal topic on first use
            before = counted(layout)
            response = await hw_never_passes_the_fsynced_end(broker, send(broker, api_key, version, **values))
            assert error(response) == 0
            assert counted(layout) - before == 1, api_key
        share = await broker.share_state_store.ensure_topic()
        partition = share.partitions[0]
        before = counted(layout)
        key = ("share-group", uuid.uuid4(), 0)
        stored = await hw_never_passes_the_fsynced_end(broker, broker.share_state_store.append_records(
            partition, [(key, None)]))
        assert stored is ErrorCode.none
        assert counted(layout) - before == 1
        assert partition.high_watermark == partition.log_end_offset == partition.flushed_end
        await broker.close()

    run(scenario())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_internal_topics_follow_flush_messages_like_any_topic(tmp_path, layout):
    """Before the one write path, a coordinator's record was fsynced whenever flush.messages was not 0."""
    async def scenario():
        broker = await start(tmp_path, layout, flush_messages=2)
        await send(broker, OFFSET_COMMIT, 9, **offset_commit_values("g"))  # the topic, and its first record
        before = counted(layout)
        for _ in range(4):
            assert offset_commit_error(await send(broker, OFFSET_COMMIT, 9, **offset_commit_values("g"))) == 0
        assert counted(layout) - before == 2  # every second record
        await broker.close()

    run(scenario())


# ----- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_fenced_producer_is_refused_by_every_writer_that_has_one(tmp_path, layout):
    async def scenario():
        broker = await start(tmp_path, layout)
        newer = build_batch([(b"k", b"v")], 0, (2000, 3, 0), transactional=True)
        older = build_batch([(b"k", b"v")], 0, (2000, 2, 1), transactional=True)
        assert produce_errors(await answer(await send(broker, PRODUCE, 11, **produce_values(-1, {0: newer})),
                                           PRODUCE, 11)) == {0: 0}
        assert produce_errors(await send(broker, PRODUCE, 11, **produce_values(-1, {0: older}))) == {
            0: ErrorCode.invalid_producer_epoch}
        pending = await send(broker, WRITE_TXN_MARKERS, 1, **markers_values(2000, 2, [0]))
        fenced = pending if not isinstance(pending, asyncio.Future) else await answer(pending, WRITE_TXN_MARKERS, 1)
        assert marker_errors(fenced) == {0: ErrorCode.invalid_producer_epoch}
        # a TxnOffsetCommit's batch at an older epoch than the producer's in __consumer_offsets
        store = broker.offsets_store
        offsets = await store.ensure_topic()
        partition = offsets.partitions[store.partition_index("g")]
        record = [offsets_log.KeyValue(b"k", b"v")]
        assert await store.append_transactional(partition, record, TxnWrite(2000, 3)) is ErrorCode.none
        assert await store.append_transactional(partition, record, TxnWrite(2000, 2)) is ErrorCode.invalid_producer_epoch
        await broker.close()

    run(scenario())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_acks_all_writes_append_nothing_while_the_isr_is_below_min_insync_replicas(tmp_path, layout):
    """Kafka's appendRecordsToLeader, markers included: before, a marker was appended at every
    retry of its coordinator while the ISR stayed too small (10 markers in 5 s for one end)."""
    async def scenario():
        broker = await start(tmp_path, layout)
        await broker.topic_admin.create_topic("short", 1, 1, {"min.insync.replicas": "2"})
        (partition,) = broker.topics.get("short").partitions
        produce = produce_values(-1, {0: records()})
        produce["topic_data"][0]["name"] = "short"
        assert produce_errors(await send(broker, PRODUCE, 11, **produce)) == {0: ErrorCode.not_enough_replicas}
        markers = markers_values(4000, 0, [0])
        markers["markers"][0]["topics"][0]["name"] = "short"
        for _ in range(3):
            assert marker_errors(await send(broker, WRITE_TXN_MARKERS, 1, **markers)) == {
                0: ErrorCode.not_enough_replicas}
        assert partition.log_end_offset == 0
        await broker.close()

    run(scenario())


def _internal_partitions(broker) -> dict:
    offsets = broker.topics.get("__consumer_offsets").partitions
    txn = broker.topics.get("__transaction_state").partitions
    return {"offsets": offsets, "txn": txn, "share": broker.topics.get("__share_group_state").partitions}


async def _every_writer(broker) -> dict[str, int]:
    """One write of each writer, each aimed at the partitions the scenario broke; their answers."""
    answers = {}
    for acks in (1, -1):
        response = await send(broker, PRODUCE, 11, **produce_values(acks, {0: records()}))
        response = response if not isinstance(response, asyncio.Future) else await answer(response, PRODUCE, 11)
        answers[f"produce acks={acks}"] = produce_errors(response)[0]
    response = await send(broker, WRITE_TXN_MARKERS, 1, **markers_values(3000, 0, [0]))
    response = response if not isinstance(response, asyncio.Future) else await answer(response, WRITE_TXN_MARKERS, 1)
    answers["marker"] = marker_errors(response)[0]
    answers["offsets"] = offset_commit_error(await send(broker, OFFSET_COMMIT, 9, **offset_commit_values("g")))
    answers["txn state"] = (await send(broker, INIT_PRODUCER_ID, 5, transactional_id="tx", transaction_timeout=60_000,
                                       producer_id=-1, producer_epoch=-1)).error_code
    share = broker.topics.get("__share_group_state").partitions[0]
    answers["share state"] = await broker.share_state_store.append_records(
        share, [(("share-group", uuid.uuid4(), 0), None)])
    return answers


async def _with_internal_topics(path, layout: str, **settings) -> Broker:
    broker = await start(path, layout, **settings)
    await broker.offsets_store.ensure_topic()
    await broker.txn_store.ensure_topic()
    await broker.share_state_store.ensure_topic()
    return broker


def _as_codes(answers: dict) -> dict:
    return {k: ErrorCode(v) for k, v in answers.items()}


# What each writer answers when its log refuses (Kafka's codes: the coordinators answer
# NOT_COORDINATOR for a log that is gone or refuses, so the client finds the coordinator again).
REFUSED = {"produce acks=1": ErrorCode.kafka_storage_error, "produce acks=-1": ErrorCode.kafka_storage_error,
           "marker": ErrorCode.kafka_storage_error, "offsets": ErrorCode.not_coordinator,
           "txn state": ErrorCode.not_coordinator, "share state": ErrorCode.kafka_storage_error}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_writer_answers_not_leader_once_another_broker_leads(tmp_path, layout):
    async def scenario():
        broker = await _with_internal_topics(tmp_path, layout)
        targets = [broker.topics.get("t").partitions[0]] + [p for ps in _internal_partitions(broker).values()
                                                              for p in ps]
        for p in targets:
            other = p.node_id + 1
            p.make_follower(PartitionState(other, p.leader_epoch + 1, 1, (p.node_id, other), (p.node_id, other)))
        assert _as_codes(await _every_writer(broker)) == {
            "produce acks=1": ErrorCode.not_leader_or_follower, "produce acks=-1": ErrorCode.not_leader_or_follower,
            "marker": ErrorCode.not_leader_or_follower, "offsets": ErrorCode.not_coordinator,
            "txn state": ErrorCode.not_coordinator, "share state": ErrorCode.not_leader_or_follower}
        await broker.close()

    run(scenario())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_writer_answers_a_storage_error_once_the_log_is_offline(tmp_path, layout):
    async def scenario():
        broker = await _with_internal_topics(tmp_path, layout)
        store = broker.storage.store(layout)
        if layout == "commitlog":
            store.go_offline("fsync failed: EIO (the test's)")  # what a failed commitlog fsync calls
        else:
            for plog in store.logs.values():  # what a failed segment fsync sets (partition_log.py)
                plog.offline = "fsync failed: EIO (the test's)"
        assert _as_codes(await _every_writer(broker)) == REFUSED
        await broker.close()

    run(scenario())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_writer_answers_a_storage_error_on_a_full_disk(small_disk, layout):
    disk = small_disk("48m")

    async def scenario():
        broker = await _with_internal_topics(disk.path / "data", layout, min_free_bytes=0,
                                             segment_bytes=4 << 20, commitlog_file_bytes=4 << 20)
        # the broker's block of producer ids, reserved while there is room (a full disk refuses
        # a new block with COORDINATOR_LOAD_IN_PROGRESS: test_producer_ids.py)
        assert (await send(broker, INIT_PRODUCER_ID, 5, transactional_id=None, transaction_timeout=60_000,
                           producer_id=-1, producer_epoch=-1)).error_code == 0
        filler = disk.fill()
        try:
            assert _as_codes(await _every_writer(broker)) == REFUSED
        finally:
            filler.unlink()  # room for the checkpoints written at close
        await broker.close()

    run(scenario())
