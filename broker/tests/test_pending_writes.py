"""Appends the commitlog engine holds in memory are written at the end of the loop's turn that
made them, whoever made them: not only a request's, which the dispatcher writes before
answering. Real engines on a temporary data dir; "after a kill -9" is a second store opened on
the same files while the first is still open, which sees what the page cache holds and no more.
"""

from __future__ import annotations

import asyncio

from broker.settings.config_from_settings import config_with
from broker.storage.modes import StorageModes
from broker.topics import TopicRegistry
from wire.batch_builder import build_batch
from wire.record_batch import parse_header


def registry(data_dir, mode: str) -> TopicRegistry:
    topics = TopicRegistry(config_with(data_dir=str(data_dir), storage_mode=mode), StorageModes(data_dir, mode, {}))
    topics.load()
    return topics


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_an_append_outside_a_request_is_written_by_the_end_of_its_turn(tmp_path):
    topics = registry(tmp_path, "commitlog")

    async def append_then_yield() -> None:
        (topic,) = (await topics.create([("t", 1, {})])).values()
        batch = build_batch([(None, b"from a background task")], 0)
        topic.partitions[0].append_as_leader(batch, parse_header(batch), acks=1)
        await asyncio.sleep(0)  # one turn: no request ended, nobody called commit_writes
        await topics.worker.close()

    run(append_then_yield())
    after_kill = registry(tmp_path, "commitlog")
    assert after_kill.get("t").partitions[0].log_end_offset == 1
