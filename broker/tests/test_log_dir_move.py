"""Log-dir moves (broker/storage/log_dir_move.py) with real engines on a temporary data dir:
what a kill right after the swap leaves, and a follower's truncation inside the commit window.
"After a kill -9" is a second registry opened on the same files while the first is still open:
it sees what the page cache holds and no more."""

from __future__ import annotations

import asyncio
import uuid

from broker.settings.config_from_settings import config_with
from broker.storage.log_dir_move import LogDirMoves
from broker.storage.modes import StorageModes
from broker.topics import TopicRegistry
from wire.batch_builder import build_batch, build_record_batch
from wire.record_batch import parse_header

ME, LEADER = 1, 2


def registry(data_dir, mode: str, **settings) -> TopicRegistry:
    topics = TopicRegistry(config_with(data_dir=str(data_dir), storage_mode=mode, **settings),
                           StorageModes(data_dir, mode, {}))
    topics.load()
    return topics


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def leader_batch(offset: int, value: bytes, epoch: int) -> bytes:
    """One record at `offset` as a leader in `epoch` stored it (the fetcher's append)."""
    batch = build_record_batch(offset, offset, [(offset, 0, None, value, ())])
    batch[12:16] = epoch.to_bytes(4, "big")  # partitionLeaderEpoch: outside the CRC
    return bytes(batch)


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


def test_a_truncation_inside_the_commit_window_copies_again_and_commits(tmp_path):
    # A follower's replica moves while its leader changes: the new leader's log diverged at 150,
    # and the fetcher cuts ours there just as the move's commit window is open. The move must
    # not give up (it did: "move ... stopped") but copy again and swap in the new leader's log.
    topics = registry(tmp_path, "segment", etcd="http://127.0.0.1:1", node_id=ME)
    moves = LogDirMoves(tmp_path, topics, topics._storage)

    async def move_across_a_truncation() -> list[int]:
        topic, _ = await topics.host("t", uuid.uuid4(), {}, [(LEADER, ME)])
        partition = topic.partitions[0]
        for offset in range(200):
            partition.append_as_follower(leader_batch(offset, b"epoch 0", 0))
        topics._storage.commit_writes()

        async def new_leader_diverges() -> None:
            while not partition.replica_log.mirroring:
                await asyncio.sleep(0)
            partition.truncate_to(150)
            for offset in range(150, 180):
                partition.append_as_follower(leader_batch(offset, b"epoch 1", 1))

        fetcher = asyncio.create_task(new_leader_diverges())
        moves.request(topic, 0, "commitlog")
        await moves._moves[("t", 0)].task
        await fetcher
        assert topic.mode_of(0) == "commitlog"
        epochs = [partition.end_offset_for(epoch) for epoch in (0, 1)]
        await topics.worker.close()
        return [partition.log_end_offset, *[end for _epoch, end in epochs]]

    assert run(move_across_a_truncation()) == [180, 150, 180]
