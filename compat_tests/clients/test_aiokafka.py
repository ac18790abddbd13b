"""aiokafka (asyncio, its own protocol stack) against a real broker process.

Tests are plain functions that drive their coroutine with asyncio.run, so they need no pytest
asyncio plugin. Consumers use group_id=None and manual assignment (no group coordinator yet).
Producers other than the idempotence test leave enable_idempotence off (aiokafka's default).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import InvalidPartitionsError

from compat_tests.helpers.records import (
    PARTITIONS, Consumed, Sent, assert_round_trip, assert_values_in_order, round_trip_records)
from compat_tests.helpers.topics import unique_topic

pytestmark = pytest.mark.timeout(120)

CODECS = ["gzip", "snappy", "lz4", "zstd"]
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 90))


def producer(broker, **config) -> AIOKafkaProducer:
    config.setdefault("linger_ms", 50)
    config.setdefault("request_timeout_ms", 15000)
    return AIOKafkaProducer(bootstrap_servers=broker.bootstrap, client_id="compat-aiokafka", **config)


def consumer(broker, **config) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                            check_crcs=True, client_id="compat-aiokafka", request_timeout_ms=15000,
                            **config)


def admin(broker) -> AIOKafkaAdminClient:
    return AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="compat-aiokafka-admin",
                               request_timeout_ms=15000)


async def produce(prod: AIOKafkaProducer, topic: str, recs) -> list[Sent]:
    futures = [(r, await prod.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                                   timestamp_ms=r.timestamp, partition=r.partition)) for r in recs]
    await prod.flush()
    sent = []
    for r, f in futures:
        md = await f
        sent.append(Sent(r, md.partition, md.offset))
    return sent


async def consume_all(broker, topic: str, partitions: int, expected: int, timeout: float = 20.0,
                      **config) -> list[Consumed]:
    cons = consumer(broker, **config)
    await cons.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        cons.assign(tps)
        await cons.seek_to_beginning(*tps)
        ends = await cons.end_offsets(tps)
        out: list[Consumed] = []

        def take(batches):
            for msgs in batches.values():
                out.extend(Consumed(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()),
                                    m.timestamp, m.timestamp_type) for m in msgs)

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            take(await cons.getmany(timeout_ms=200))
            positions = [await cons.position(tp) for tp in tps]
            if len(out) >= expected and all(pos >= ends[tp] for pos, tp in zip(positions, tps)):
                break
        take(await cons.getmany(timeout_ms=300))
        return out
    finally:
        await cons.stop()


async def create_topic(broker, prefix: str, partitions: int, configs: dict | None = None) -> str:
    name = unique_topic(prefix)
    adm = admin(broker)
    await adm.start()
    try:
        resp = (await adm.create_topics([NewTopic(name, partitions, 1, topic_configs=configs or {})])).to_object()
        assert [(t["topic"], t["error_code"]) for t in resp["topic_errors"]] == [(name, 0)], resp
        await wait_for_partitions(adm, name, partitions)
    finally:
        await adm.close()
    return name


async def wait_for_partitions(adm: AIOKafkaAdminClient, name: str, partitions: int, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while True:
        topics = await adm.describe_topics([name])
        if topics and topics[0]["error_code"] == 0:
            parts = topics[0]["partitions"]
            if len(parts) == partitions and all(p["error_code"] == 0 and p["leader"] >= 0 for p in parts):
                return sorted(p["partition"] for p in parts)
        if time.monotonic() > deadline:
            raise AssertionError(f"{name} not ready with {partitions} partitions: {topics}")
        await asyncio.sleep(0.1)


def test_round_trip_keys_values_headers_timestamps(broker):
    async def body():
        topic = await create_topic(broker, "aio-roundtrip", PARTITIONS)
        recs = round_trip_records(null_key_and_value=False)  # send() refuses key=None and value=None
        prod = producer(broker)
        await prod.start()
        try:
            sent = await produce(prod, topic, recs)
        finally:
            await prod.stop()
        assert_round_trip(sent, await consume_all(broker, topic, PARTITIONS, len(recs)))

        counts = {p: sum(1 for s in sent if s.partition == p) for p in range(PARTITIONS)}
        cons = consumer(broker)
        await cons.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            assert await cons.beginning_offsets(tps) == {tp: 0 for tp in tps}
            assert await cons.end_offsets(tps) == {tp: counts[tp.partition] for tp in tps}
        finally:
            await cons.stop()
    run(body())


@pytest.mark.parametrize("codec", CODECS)
def test_compression_round_trip(broker, codec):
    async def body():
        topic = await create_topic(broker, f"aio-{codec}", PARTITIONS)
        recs = round_trip_records(null_key_and_value=False)  # send() refuses key=None and value=None
        prod = producer(broker, compression_type=codec, linger_ms=100)
        await prod.start()
        try:
            sent = await produce(prod, topic, recs)
        finally:
            await prod.stop()
        assert_round_trip(sent, await consume_all(broker, topic, PARTITIONS, len(recs)))
    run(body())


def test_idempotent_producer_acks_all(broker):
    async def body():
        topic = await create_topic(broker, "aio-idem", PARTITIONS)
        prod = producer(broker, enable_idempotence=True, acks="all", linger_ms=20)
        await prod.start()
        n = 600
        try:
            futures = [(i, await prod.send(topic, key=f"k{i % 17}".encode(), value=f"v{i}".encode()))
                       for i in range(n)]
            acks = [(i, await f) for i, f in futures]
            pid = prod._txn_manager.producer_id if prod._txn_manager else -1
        finally:
            await prod.stop()
        assert pid >= 0, "idempotent producer has no producer id (InitProducerId)"
        sent: dict[int, list] = {p: [] for p in range(PARTITIONS)}
        for i, md in acks:
            sent[md.partition].append((md.offset, f"v{i}".encode()))
        for p, entries in sent.items():
            assert [o for o, _ in entries] == list(range(len(entries))), f"partition {p} offsets"
        consumed = await consume_all(broker, topic, PARTITIONS, n)
        for p in range(PARTITIONS):
            got = [(c.offset, c.value) for c in consumed if c.partition == p]
            assert got == sent[p], f"partition {p}: read back differs from acked"
    run(body())


def test_offsets_for_times_exact_record_inside_batch(broker):
    async def body():
        topic = await create_topic(broker, "aio-times", 1)
        t0 = 1_730_000_000_000
        prod = producer(broker, linger_ms=1000, max_batch_size=1 << 20)
        await prod.start()
        try:
            offsets = []
            for base in (0, 100):  # two batches of ten, timestamps 10 ms apart
                futures = [await prod.send(topic, value=b"r%d" % (base + i), timestamp_ms=t0 + base + 10 * i,
                                           partition=0) for i in range(10)]
                await prod.flush()
                offsets += [(await f).offset for f in futures]
        finally:
            await prod.stop()
        assert offsets == list(range(20))

        tp = TopicPartition(topic, 0)
        cons = consumer(broker)
        await cons.start()
        try:
            cases = {t0 - 5: 0, t0: 0, t0 + 15: 2, t0 + 20: 2, t0 + 90: 9, t0 + 95: 10, t0 + 155: 16,
                     t0 + 190: 19}
            for ts, want in cases.items():
                got = (await cons.offsets_for_times({tp: ts}))[tp]
                assert got is not None, f"offsets_for_times(t0{ts - t0:+d}) returned None"
                assert (got.offset, got.timestamp) == (want, t0 + 10 * want), f"query t0{ts - t0:+d}"
            assert (await cons.offsets_for_times({tp: t0 + 191}))[tp] is None
            assert await cons.end_offsets([tp]) == {tp: 20}
        finally:
            await cons.stop()
    run(body())


def test_fetch_from_middle_of_batch(broker):
    async def body():
        topic = await create_topic(broker, "aio-middle", 1)
        values = [b"m%04d" % i for i in range(500)]
        prod = producer(broker, linger_ms=200, compression_type="gzip")
        await prod.start()
        try:
            futures = [await prod.send(topic, value=v, partition=0) for v in values]
            assert [(await f).offset for f in futures] == list(range(500))
        finally:
            await prod.stop()
        tp = TopicPartition(topic, 0)
        cons = consumer(broker)
        await cons.start()
        try:
            cons.assign([tp])
            cons.seek(tp, 333)
            got = []
            deadline = time.monotonic() + 10
            while len(got) < 167 and time.monotonic() < deadline:
                for msgs in (await cons.getmany(timeout_ms=200)).values():
                    got.extend((m.offset, m.value) for m in msgs)
            assert got == [(i, values[i]) for i in range(333, 500)]
        finally:
            await cons.stop()
    run(body())


def test_admin_create_with_configs_and_describe(broker):
    async def body():
        topic = unique_topic("aio-admin-create")
        adm = admin(broker)
        await adm.start()
        try:
            resp = (await adm.create_topics([NewTopic(topic, 4, 1, topic_configs={
                "retention.ms": "7200000", "cleanup.policy": "delete"})])).to_object()
            assert [(t["topic"], t["error_code"]) for t in resp["topic_errors"]] == [(topic, 0)], resp
            assert await wait_for_partitions(adm, topic, 4) == [0, 1, 2, 3]
            assert topic in await adm.list_topics()

            described = await adm.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
            entries = {}
            for response in described:
                for res in response.to_object()["resources"]:
                    assert res["error_code"] == 0, res
                    if res["resource_name"] == topic:
                        entries.update({e["config_names"]: e["config_value"] for e in res["config_entries"]})
            assert entries.get("retention.ms") == "7200000", entries
            assert entries.get("cleanup.policy") == "delete", entries

            again = (await adm.create_topics([NewTopic(topic, 1, 1)])).to_object()
            assert [t["error_code"] for t in again["topic_errors"]] == [TOPIC_ALREADY_EXISTS], again
        finally:
            await adm.close()
    run(body())


def test_admin_create_partitions(broker):
    async def body():
        topic = await create_topic(broker, "aio-admin-grow", 1)
        adm = admin(broker)
        await adm.start()
        try:
            await adm.create_partitions({topic: NewPartitions(3)})
            assert await wait_for_partitions(adm, topic, 3) == [0, 1, 2]
            with pytest.raises(InvalidPartitionsError):
                await adm.create_partitions({topic: NewPartitions(2)})
        finally:
            await adm.close()
        prod = producer(broker)
        await prod.start()
        try:
            md = await prod.send_and_wait(topic, b"new partition", partition=2)
            assert (md.partition, md.offset) == (2, 0)
        finally:
            await prod.stop()
    run(body())


def test_admin_delete_topic(broker):
    async def body():
        topic = await create_topic(broker, "aio-admin-delete", 2)
        adm = admin(broker)
        await adm.start()
        try:
            resp = (await adm.delete_topics([topic])).to_object()
            assert [(t["topic"], t["error_code"]) for t in resp["topic_error_codes"]] == [(topic, 0)], resp
            # list_topics asks for all topics, which never auto-creates; describe_topics([name]) might.
            deadline = time.monotonic() + 10
            while topic in await adm.list_topics() and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert topic not in await adm.list_topics()
        finally:
            await adm.close()
    run(body())


def test_admin_rejects_invalid_partition_count(broker):
    async def body():
        topic = unique_topic("aio-badparts")
        adm = admin(broker)
        await adm.start()
        try:
            resp = (await adm.create_topics([NewTopic(topic, 0, 1)])).to_object()
            assert [t["error_code"] for t in resp["topic_errors"]] == [INVALID_PARTITIONS], resp
            assert topic not in await adm.list_topics()
        finally:
            await adm.close()
    run(body())


def test_values_survive_many_small_batches(broker):
    """linger 0: every send is its own request; offsets must still be dense and in send order."""
    async def body():
        topic = await create_topic(broker, "aio-small", 1)
        values = [b"s%d" % i for i in range(300)]
        prod = producer(broker, linger_ms=0)
        await prod.start()
        try:
            offsets = [(await prod.send_and_wait(topic, v, partition=0)).offset for v in values]
        finally:
            await prod.stop()
        assert offsets == list(range(300))
        assert_values_in_order(await consume_all(broker, topic, 1, len(values)), values)
    run(body())
