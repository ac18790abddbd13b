"""topics.json: what is written reads back, a cluster member's file keeps only the layouts, the
replaced version stays as topics.json.bak, and files from before storage modes read as segment."""

from __future__ import annotations

import json
import uuid

from broker.storage import topics_file
from broker.storage.topics_file import SavedTopic

ORDERS = SavedTopic(uuid.uuid4(), "commitlog", {1: "segment"}, 3, {"retention.ms": "1000"})
EVENTS = SavedTopic(uuid.uuid4(), "segment", {}, 1, {})


def test_one_brokers_file_reads_back_whole(tmp_path):
    topics_file.write(tmp_path, {"orders": ORDERS, "events": EVENTS}, cluster=False)
    assert topics_file.read(tmp_path) == {"orders": ORDERS, "events": EVENTS}


def test_a_cluster_members_file_keeps_ids_and_layouts_only(tmp_path):
    topics_file.write(tmp_path, {"orders": ORDERS}, cluster=True)
    stored = json.loads((tmp_path / "topics.json").read_text())["topics"]["orders"]
    assert stored == {"id": str(ORDERS.topic_id), "storage_mode": "commitlog", "partition_modes": {"1": "segment"}}
    assert topics_file.read(tmp_path) == {"orders": SavedTopic(ORDERS.topic_id, "commitlog", {1: "segment"})}


def test_the_replaced_file_is_kept_as_bak(tmp_path):
    topics_file.write(tmp_path, {"orders": ORDERS}, cluster=False)
    first = (tmp_path / "topics.json").read_text()
    topics_file.write(tmp_path, {"events": EVENTS}, cluster=False)
    assert (tmp_path / "topics.json.bak").read_text() == first
    assert set(topics_file.read(tmp_path)) == {"events"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["topics.json", "topics.json.bak"]


def test_no_file_is_no_topics_and_an_old_file_is_all_segments(tmp_path):
    assert topics_file.read(tmp_path) == {}
    topic_id = uuid.uuid4()
    (tmp_path / "topics.json").write_text(json.dumps(
        {"version": 1, "topics": {"old": {"id": str(topic_id), "partitions": 2, "configs": {}}}}))
    assert topics_file.read(tmp_path) == {"old": SavedTopic(topic_id, "segment", {}, 2, {})}
