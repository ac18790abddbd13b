"""A classic consumer group driven by hand over raw requests: join, sync, heartbeat, commit, fetch."""

from __future__ import annotations

import uuid

from compat_tests.helpers.cluster import Cluster
from compat_tests.helpers.raw_kafka import Client

NONE = 0
MEMBER_ID_REQUIRED = 79
# Reference versions used when an API is not the one under test.
JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT, FETCH, DESCRIBE, LIST = 9, 5, 4, 5, 9, 9, 5, 5
OFFSETS_BY_TOPIC_ID = 10  # OffsetCommit and OffsetFetch from v10 name topics by id, not by name
SESSION_MS = 10_000


def new_group() -> str:
    return f"g-{uuid.uuid4().hex[:12]}"


def join_values(group: str, member_id: str = "", protocols=(("range", b"meta-range"),),
                session_ms: int = SESSION_MS, protocol_type: str = "consumer", instance_id=None) -> dict:
    return dict(group_id=group, session_timeout=session_ms, rebalance_timeout=session_ms,
                member_id=member_id, group_instance_id=instance_id, protocol_type=protocol_type,
                protocols=[{"name": n, "metadata": m} for n, m in protocols], reason=None)


def join(client: Client, group: str, version: int = JOIN, **kw):
    """JoinGroup, answering MEMBER_ID_REQUIRED (v4+) with the member id it hands out."""
    r = client.request(11, version, **join_values(group, **kw))
    if version >= 4 and r.error_code == MEMBER_ID_REQUIRED:
        assert r.member_id, "MEMBER_ID_REQUIRED must carry the member id to rejoin with"
        r = client.request(11, version, **join_values(group, **{**kw, "member_id": r.member_id}))
    return r


def sync(client: Client, group: str, generation: int, member_id: str, assignments=(),
         version: int = SYNC, protocol_name: str | None = "range"):
    return client.request(14, version, group_id=group, generation_id=generation, member_id=member_id,
                          group_instance_id=None, protocol_type="consumer", protocol_name=protocol_name,
                          assignments=[{"member_id": m, "assignment": a} for m, a in assignments])


def heartbeat(client: Client, group: str, generation: int, member_id: str, version: int = HEARTBEAT):
    return client.request(12, version, group_id=group, generation_id=generation, member_id=member_id,
                          group_instance_id=None).error_code


def stable_member(client: Client, group: str) -> tuple[str, int]:
    """A single-member Stable group: (member id, generation)."""
    j = join(client, group)
    assert j.error_code == NONE, j
    s = sync(client, group, j.generation_id, j.member_id, [(j.member_id, b"all-of-it")])
    assert s.error_code == NONE and s.assignment == b"all-of-it", s
    return j.member_id, j.generation_id


def topic_ids(client: Client, names) -> dict[str, uuid.UUID]:
    """Each topic's id; for a topic that does not exist, an id no topic has."""
    return {t.name: t.topic_id if t.error_code == NONE else uuid.uuid4()
            for t in client.metadata(list(names)).topics}


def commit(client: Client, group: str, offsets: dict, generation: int = -1, member_id: str = "",
           version: int = COMMIT, ids: dict | None = None) -> dict:
    """OffsetCommit {(topic, partition): offset}; returns {(topic, partition): error code}.
    v10+ send each topic's id (from `ids` if given, else asked of the broker) and read it back."""
    by_topic: dict[str, list] = {}
    for (t, p), off in offsets.items():
        by_topic.setdefault(t, []).append({"partition_index": p, "committed_offset": off,
                                           "committed_leader_epoch": -1, "committed_metadata": f"m{off}"})
    if version >= OFFSETS_BY_TOPIC_ID and ids is None:
        ids = topic_ids(client, by_topic)
    r = client.request(8, version, group_id=group, generation_id_or_member_epoch=generation,
                       member_id=member_id, group_instance_id=None, retention_time=-1,
                       topics=[{"name": t, "topic_id": (ids or {}).get(t), "partitions": ps}
                               for t, ps in by_topic.items()])
    names = {topic_id: name for name, topic_id in (ids or {}).items()}
    return {(names[t.topic_id] if version >= OFFSETS_BY_TOPIC_ID else t.name, p.partition_index): p.error_code
            for t in r.topics for p in t.partitions}


def fetch_committed(client: Client, group: str, partitions=None, version: int = FETCH,
                    topics_of_group=()) -> dict:
    """OffsetFetch -> {(topic, partition): (offset, metadata)}; partitions None asks for all.
    v10+ name topics by id: the answer's ids are read back through `partitions`' topics and,
    when asking for all, `topics_of_group`."""
    topics = None
    ids = {}
    if version >= OFFSETS_BY_TOPIC_ID:
        ids = topic_ids(client, {t for t, _ in partitions or ()} | set(topics_of_group))
    if partitions is not None:
        by_topic: dict[str, list] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        topics = [{"name": t, "topic_id": ids.get(t), "partition_indexes": ps} for t, ps in by_topic.items()]
    if version >= 8:
        r = client.request(9, version, require_stable=False, groups=[
            {"group_id": group, "member_id": None, "member_epoch": -1, "topics": topics}])
        (g,) = r.groups
        assert g.group_id == group and g.error_code == NONE, g
        result_topics = g.topics
    else:
        r = client.request(9, version, group_id=group, topics=topics, require_stable=False)
        if version >= 2:
            assert r.error_code == NONE, r
        result_topics = r.topics
    names = {topic_id: name for name, topic_id in ids.items()}
    out = {}
    for t in result_topics:
        name = names[t.topic_id] if version >= OFFSETS_BY_TOPIC_ID else t.name
        for p in t.partitions:
            assert p.error_code == NONE, (name, p)
            out[(name, p.partition_index)] = (p.committed_offset, p.metadata)
    return out


def offset_delete(client, version, group, wanted: dict[str, list[int]]):
    r = client.request(47, version, group_id=group, topics=[
        {"name": t, "partitions": [{"partition_index": p} for p in ps]} for t, ps in wanted.items()])
    return r.error_code, {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}


def _live(cluster: Cluster):
    return [(node, p) for node, p in cluster.brokers.items() if p.is_running()]


def find_coordinator(cluster: Cluster, group: str) -> int | None:
    """The node a live broker names (FindCoordinator v3), or None while none can say."""
    for _, proc in _live(cluster):
        try:
            with Client(proc.host, proc.port, timeout=3) as c:
                r = c.request(10, 3, key=group, key_type=0)
        except OSError:
            continue
        if r.error_code == 0:
            return r.node_id
    return None
