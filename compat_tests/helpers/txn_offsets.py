"""A transaction's offsets: TxnOffsetCommit, its marker, and OffsetFetch that waits for stable offsets."""

from __future__ import annotations

from broker.groups.offsets_log import partition_for
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.txn_markers import write_marker

NONE = 0
UNSTABLE_OFFSET_COMMIT = 88
OFFSETS_TOPIC = "__consumer_offsets"
LATEST = 4  # the newest before transactions V2: the markers here are written by hand


def txn_commit(client: Client, group: str, pid: int, offsets: dict, version: int = LATEST, epoch: int = 0,
               generation: int = -1, member_id: str = "", tid: str = "txn-id") -> dict:
    """TxnOffsetCommit {(topic, partition): offset}; returns {(topic, partition): error code}."""
    by_topic: dict[str, list] = {}
    for (t, p), off in offsets.items():
        by_topic.setdefault(t, []).append({"partition_index": p, "committed_offset": off,
                                           "committed_leader_epoch": 4, "committed_metadata": f"txn{off}"})
    r = client.request(28, version, transactional_id=tid, group_id=group, producer_id=pid,
                       producer_epoch=epoch, generation_id=generation, member_id=member_id, group_instance_id=None,
                       topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()])
    return {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}


def end_txn(client: Client, group: str, pid: int, commit_it: bool, epoch: int = 0) -> None:
    """The coordinator's marker in the group's __consumer_offsets partition."""
    (offsets_topic,) = client.metadata([OFFSETS_TOPIC]).topics
    index = partition_for(group, len(offsets_topic.partitions))
    assert write_marker(client, OFFSETS_TOPIC, pid, commit_it, epoch=epoch, partition=index) == NONE


def stable_fetch(client: Client, group: str, partitions, version: int = 9) -> dict:
    """OffsetFetch with require_stable: {(topic, partition): (offset, error code)}."""
    by_topic: dict[str, list] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
    if version >= 8:
        (g,) = client.request(9, version, require_stable=True, groups=[
            {"group_id": group, "member_id": None, "member_epoch": -1, "topics": topics}]).groups
        assert g.error_code == NONE
        result = g.topics
    else:
        r = client.request(9, version, group_id=group, topics=topics, require_stable=True)
        assert r.error_code == NONE
        result = r.topics
    return {(t.name, p.partition_index): (p.committed_offset, p.error_code) for t in result for p in t.partitions}
