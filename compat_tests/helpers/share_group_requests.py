"""A KIP-932 share group member driven by hand over raw requests (ShareGroupHeartbeat)."""

from __future__ import annotations

import uuid

from compat_tests.helpers.raw_kafka import Client

NONE, INVALID_REQUEST, UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND, INVALID_CONFIG = 0, 42, 25, 69, 40
HEARTBEAT, DESCRIBE, FETCH, ACKNOWLEDGE, LIST_GROUPS = 76, 77, 78, 79, 16


def new_group() -> str:
    return f"sg-{uuid.uuid4().hex[:12]}"


def heartbeat(client: Client, group: str, member: str, epoch: int, topics=None, version: int = 1):
    return client.request(HEARTBEAT, version, group_id=group, member_id=member, member_epoch=epoch, rack_id=None,
                          subscribed_topic_names=topics)


def join(client: Client, group: str, topic: str) -> tuple[str, int]:
    member = str(uuid.uuid4())
    r = heartbeat(client, group, member, 0, [topic])
    assert r.error_code == NONE, r
    return member, r.member_epoch


def partition_of(resp):
    (t,) = resp.responses
    (p,) = t.partitions
    return p


def owned_by_member(client: Client, group: str) -> tuple[int, dict[str, tuple[int, set]]]:
    """ShareGroupDescribe: the group epoch, and member id -> (member epoch, its partitions)."""
    (d,) = client.request(DESCRIBE, 1, group_ids=[group], include_authorized_operations=False).groups
    assert d.error_code == NONE, d
    return d.group_epoch, {m.member_id: (m.member_epoch, {(t.topic_id, p) for t in m.assignment.topic_partitions
                                                          for p in t.partitions}) for m in d.members}


def assigned(r) -> set:
    return {(t.topic_id, p) for t in r.assignment.topic_partitions for p in t.partitions}
