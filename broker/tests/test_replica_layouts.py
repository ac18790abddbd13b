"""A cluster member's replicas: each in this broker's layout unless the topic names one, and
after a restart in the layout topics.json records (a log-dir move's included), with real
engines on a temporary data dir."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from broker.settings.config_from_settings import config_with
from broker.storage.modes import StorageModes
from broker.storage.replica_layouts import ReplicaLayouts
from broker.topics import TopicRegistry
from wire.batch_builder import build_batch

ME, OTHER = 1, 2


def member(data_dir, mode: str) -> TopicRegistry:
    topics = TopicRegistry(config_with(data_dir=str(data_dir), etcd="http://127.0.0.1:1", node_id=ME,
                                       storage_mode=mode), StorageModes(data_dir, mode, {}))
    topics.load()
    return topics


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


@pytest.mark.parametrize("mode", ["segment", "commitlog"])
def test_a_replica_is_in_this_brokers_layout_unless_the_topic_names_one(tmp_path, mode):
    other = "commitlog" if mode == "segment" else "segment"
    topics = member(tmp_path, mode)

    async def scenario():
        plain, _ = await topics.host("plain", uuid.uuid4(), {}, [(OTHER, ME)])
        named, _ = await topics.host("named", uuid.uuid4(), {"storage.mode": other}, [(ME, OTHER)])
        assert (plain.mode_of(0), named.mode_of(0)) == (mode, other)
        await topics.worker.close()

    run(scenario())
    saved = json.loads((tmp_path / "topics.json").read_text())["topics"]
    assert {name: entry["storage_mode"] for name, entry in saved.items()} == {"plain": mode, "named": other}
    assert "configs" not in saved["plain"]  # etcd has the configs: one place for each fact


def test_a_moved_replica_reopens_in_its_new_layout_after_a_restart(tmp_path):
    topic_id = uuid.uuid4()
    topics = member(tmp_path, "segment")

    async def move():
        topic, _ = await topics.host("t", topic_id, {}, [(ME, OTHER), (ME, OTHER)])
        # What log_dir_move.py's commit does, without the copy: a future log in the other
        # layout holding a record, then topics.json names that layout.
        store = topics._storage.store("commitlog")
        future = store.open_partition("t", 1, topics._log_config(topic))
        future.append_as_follower(build_batch([(None, b"kept")], 0))
        store.commit_writes()
        future.flush()
        assert await topics.change_layout(topic, 1, "commitlog", lambda: True)
        topics._storage.close()
        await topics.worker.close()

    run(move())
    again = member(tmp_path, "segment")  # the broker's default did not change: the record decides

    async def reopen():
        topic, _ = await again.host("t", topic_id, {}, [(ME, OTHER), (ME, OTHER)])
        assert (topic.mode_of(0), topic.mode_of(1)) == ("segment", "commitlog")
        assert topic.partitions[1].log_end_offset == 1
        await again.worker.close()

    run(reopen())


def test_without_a_record_a_replica_opens_where_its_files_are():
    layouts = ReplicaLayouts("segment", {}, {("t", 0): {"commitlog"}, ("t", 1): {"segment", "commitlog"}})
    assert layouts.choose("t", uuid.uuid4(), {}, [0, 1, 2]) == ("segment", {0: "commitlog"})
    # topics.json's word over the files; a partition no longer hosted here keeps no entry
    topic_id = uuid.uuid4()
    recorded = ReplicaLayouts("segment", {"t": (topic_id, "commitlog", {1: "segment", 3: "segment"})}, {})
    assert recorded.choose("t", topic_id, {}, [0, 1]) == ("commitlog", {1: "segment"})
    assert recorded.choose("t", uuid.uuid4(), {}, [0, 1]) == ("segment", {})  # a new topic of that name
