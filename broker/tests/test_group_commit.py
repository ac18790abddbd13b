"""GroupCommit when the fsync or the writes before it fail: every waiter gets the error, none
hangs and none is told its data is durable; and the broker's GroupCommit of a partition lasts
as long as the partition is hosted here."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

import pytest

from broker.broker import Broker
from broker.settings.config_from_settings import config_with
from broker.storage.group_commit import GroupCommit, PartitionCommits
from broker.storage.modes import StorageModes
from broker.topics import TopicRegistry
from segment.log import LogOffline
from wire.batch_builder import build_batch
from wire.record_batch import parse_header


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5))


def test_a_failed_fsync_fails_every_waiter_and_later_syncs_do_not_hang():
    # As the engines behave: after one failed fsync the log is offline and every later flush
    # raises too (a second fsync could succeed without the data the first one lost).
    calls = []

    def flush():
        calls.append(1)
        raise LogOffline("fsync failed: EIO" if len(calls) == 1 else "offline")

    commit = GroupCommit(flush, lambda: 7)

    async def scenario():
        results = await asyncio.gather(commit.sync(), commit.sync(), commit.sync(), return_exceptions=True)
        assert all(isinstance(r, LogOffline) for r in results), results
        with pytest.raises(LogOffline):
            await commit.sync()

    run(scenario())
    assert len(calls) >= 2  # the waiters queued behind the failed fsync got one of their own


def test_failed_writes_before_the_fsync_fail_the_waiter_instead_of_hanging():
    ends = iter([LogOffline("writing appended units failed: ENOSPC"), 3])

    def end():
        value = next(ends)
        if isinstance(value, Exception):
            raise value
        return value

    commit = GroupCommit(lambda: None, end)

    async def scenario():
        with pytest.raises(LogOffline):
            await commit.sync()
        assert await commit.sync() == 3

    run(scenario())


def _produce(partition, value: bytes) -> None:
    batch = build_batch([(b"k", value)], 0)
    partition.append_as_leader(batch, parse_header(batch), acks=1)


def test_a_deleted_partition_leaves_no_group_commit_and_its_successor_fsyncs_its_own_log(tmp_path):
    # Before, the broker kept each partition's GroupCommit under id(partition) for ever: deleted
    # partitions stayed in memory, and a new partition given a freed id would share its fsync.
    broker = Broker(config_with(data_dir=str(tmp_path)))

    async def scenario():
        (old,) = (await broker.create_topic("t", 1, 1, {"flush.messages": "1"})).partitions
        _produce(old, b"a")
        assert await broker.durable(old) == 1
        assert len(broker.group_commits) == 1 and len(broker.flush_by_count) == 0
        broker.flush_by_count.appended(old, 1)
        await broker.delete_topic("t")
        assert len(broker.group_commits) == 0 and len(broker.flush_by_count) == 0
        (new,) = (await broker.create_topic("t", 1, 1, {"flush.messages": "1"})).partitions
        for value in (b"b", b"c"):
            _produce(new, value)
        assert await broker.durable(new) == 2  # the new log's end, not the old one's
        await broker.close()

    run(scenario())


def test_a_partition_under_a_name_another_had_never_gets_that_ones_group_commit():
    commits = PartitionCommits(lambda p: GroupCommit(lambda: None, lambda: p.end))
    old, new = SimpleNamespace(topic="t", index=0, end=1), SimpleNamespace(topic="t", index=0, end=2)

    async def scenario():
        assert await commits.sync(old) == 1
        assert await commits.sync(new) == 2  # even if nobody told it the old one went
        commits.forget(old)  # late news of the old one leaves the new one's entry alone
        assert len(commits) == 1
        commits.forget(new)
        assert len(commits) == 0

    run(scenario())


def test_a_partition_moved_away_from_a_cluster_member_is_reported_removed(tmp_path):
    removed = []
    topics = TopicRegistry(config_with(data_dir=str(tmp_path), etcd="http://127.0.0.1:1", node_id=1),
                           StorageModes(tmp_path, "segment", {}), on_removed=removed.append)
    topics.load()
    topic_id = uuid.uuid4()

    async def scenario():
        topic, _ = await topics.host("t", topic_id, {}, [(1, 2), (1, 2)])
        moving = topic.partitions[1]
        _, dropped = await topics.host("t", topic_id, {}, [(1, 2), (2, 3)])
        assert dropped == [1] and removed == [moving]
        await topics.worker.close()

    run(scenario())
