"""DeleteRecords over many commitlog partitions checkpoints the log starts and collects freed
files once for the request, not once per partition (each writes every partition's start or
walks every queue: per partition, a request over N partitions cost N² work), and the starts it
answered survive a restart. A real Broker on real files, driven through its request dispatch."""

from __future__ import annotations

import asyncio

from broker.broker import Broker
from broker.api.dispatch import dispatch
from broker.settings.config_from_settings import config_with
from wire.batch_builder import build_batch
from wire.client_codec import decode_response, encode_request
from wire.error_codes import ErrorCode
from wire.request_builder import build_request

PARTITIONS = 50
PRODUCE, DELETE_RECORDS = 0, 21


async def _broker(path) -> Broker:
    return Broker(config_with(data_dir=str(path), storage_mode="commitlog"))


async def send(broker: Broker, api_key: int, version: int, **values):
    frame = encode_request(build_request(api_key, version, **values), 7, "delete-records")[4:]
    chunks = await dispatch(broker, frame)
    return decode_response(b"".join(bytes(c) for c in chunks)[4:], api_key, version)


def test_one_checkpoint_of_the_log_starts_for_a_request_over_many_partitions(tmp_path):
    async def scenario():
        broker = await _broker(tmp_path)
        await broker.topic_admin.create_topic("t", PARTITIONS, 1, {})
        for base in (0, 1):
            batches = {i: build_batch([(None, b"v%d" % base)], 0, None, False) for i in range(PARTITIONS)}
            produced = await send(broker, PRODUCE, 9, transactional_id=None, acks=1, timeout=10_000, topic_data=[
                {"name": "t", "partition_data": [{"index": i, "records": bytes(b)} for i, b in batches.items()]}])
            assert {p.error_code for t in produced.responses for p in t.partition_responses} == {ErrorCode.none}
        checkpoints = broker.storage.store("commitlog").checkpoints
        written = []
        persist = checkpoints.persist_log_starts
        checkpoints.persist_log_starts = lambda: (written.append(1), persist())[1]
        answer = await send(broker, DELETE_RECORDS, 2, timeout=10_000, topics=[
            {"name": "t", "partitions": [{"partition_index": i, "offset": 1} for i in range(PARTITIONS)]}])
        assert [(p.error_code, p.low_watermark) for t in answer.topics for p in t.partitions] == \
            [(ErrorCode.none, 1)] * PARTITIONS
        assert len(written) == 1  # before the answer, once
        await broker.close()

        again = await _broker(tmp_path)
        assert [again.topics.partition("t", i).log_start_offset for i in range(PARTITIONS)] == [1] * PARTITIONS
        await again.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
