"""Appends the commitlog engine holds in memory are written at the end of the loop's turn that
made them, whoever made them: not only a request's, which the dispatcher writes before
answering. Real engines on a temporary data dir; "after a kill -9" is a second store opened on
the same files while the first is still open, which sees what the page cache holds and no more.
"""

from __future__ import annotations

import asyncio

from broker.settings.config_from_settings import config_with
from broker.storage.log_dir_move import LogDirMoves
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


def test_a_move_killed_right_after_its_swap_keeps_every_append(tmp_path):
    # A producer appends every turn while a segment partition moves to the commitlog; the
    # appends mirror_into copied at the commit, and those after it, stayed in the commitlog's
    # memory until a request ended: a kill just after the swap lost the log's tail.
    topics = registry(tmp_path, "segment")
    moves = LogDirMoves(tmp_path, topics, topics._storage)

    async def move_under_appends() -> int:
        (topic,) = (await topics.create([("t", 1, {})])).values()
        partition = topic.partitions[0]
        for i in range(2000):
            batch = build_batch([(None, b"%d" % i + bytes(4000))], 0)
            partition.append_as_leader(batch, parse_header(batch), acks=1)
        topics._storage.commit_writes()

        async def produce() -> None:
            while True:
                batch = build_batch([(None, b"during the move")], 0)
                topic.partitions[0].append_as_leader(batch, parse_header(batch), acks=1)
                await asyncio.sleep(0)

        producer = asyncio.create_task(produce())
        moves.request(topic, 0, "commitlog")
        await moves._moves[("t", 0)].task
        producer.cancel()
        end = topic.partitions[0].log_end_offset
        await topics.worker.close()
        return end

    end = run(move_under_appends())
    after_kill = registry(tmp_path, "segment")
    topic = after_kill.get("t")
    assert topic.mode_of(0) == "commitlog"
    assert topic.partitions[0].log_end_offset == end
