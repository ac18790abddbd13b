"""A KIP-848 consumer group member driven by hand over raw requests (ConsumerGroupHeartbeat)."""

from __future__ import annotations

import uuid

from compat_tests.helpers.raw_kafka import Client

NONE, INVALID_REQUEST, UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION, UNKNOWN_TOPIC_ID = 0, 42, 25, 35, 100
HEARTBEAT, DESCRIBE = 68, 69


def new_group() -> str:
    return f"cg-{uuid.uuid4().hex[:12]}"


class Member:
    """One consumer-protocol member, driven by hand: it owns what its last answer assigned."""

    def __init__(self, client: Client, group: str, version: int = 1, topics=None, regex=None,
                 assignor=None, instance_id=None):
        self.client, self.group, self.version = client, group, version
        self.topics, self.regex, self.assignor, self.instance_id = topics, regex, assignor, instance_id
        self.member_id = str(uuid.uuid4()) if version >= 1 else ""
        self.epoch = 0
        self.owned: dict[uuid.UUID, list[int]] = {}

    def request(self, epoch: int | None = None, owned=None, **override):
        values = dict(group_id=self.group, member_id=self.member_id,
                      member_epoch=self.epoch if epoch is None else epoch, instance_id=self.instance_id,
                      rack_id=None, rebalance_timeout=-1, subscribed_topic_names=None,
                      subscribed_topic_regex=None, server_assignor=None,
                      topic_partitions=[{"topic_id": t, "partitions": ps}
                                        for t, ps in (self.owned if owned is None else owned).items()])
        if values["member_epoch"] == 0:
            values.update(rebalance_timeout=30_000, subscribed_topic_names=self.topics,
                          subscribed_topic_regex=self.regex, server_assignor=self.assignor, topic_partitions=[])
        values.update(override)
        return self.client.request(HEARTBEAT, self.version, **values)

    def heartbeat(self, **kw):
        r = self.request(**kw)
        assert r.error_code == NONE, r
        if r.member_id:
            self.member_id = r.member_id
        self.epoch = r.member_epoch
        if r.assignment is not None:
            self.owned = {t.topic_id: sorted(t.partitions) for t in r.assignment.topic_partitions if t.partitions}
        return r

    def join(self):
        self.epoch = 0
        return self.heartbeat()

    def leave(self):
        r = self.request(epoch=-1)
        assert (r.error_code, r.member_epoch) == (NONE, -1), r
        self.owned = {}
        return r

    def partitions(self) -> set[tuple[uuid.UUID, int]]:
        return {(t, p) for t, ps in self.owned.items() for p in ps}


def describe(client: Client, group: str, version: int = 1):
    (g,) = client.request(DESCRIBE, version, group_ids=[group], include_authorized_operations=False).groups
    return g


def commit(client: Client, group: str, topic: str, offset: int, epoch: int, member_id: str, version: int = 9):
    r = client.request(8, version, group_id=group, generation_id_or_member_epoch=epoch, member_id=member_id,
                       group_instance_id=None, retention_time=-1, topics=[{"name": topic, "partitions": [
                           {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
                            "committed_metadata": ""}]}])
    return r.topics[0].partitions[0].error_code


def fetch(client: Client, group: str, member_id=None, epoch=-1):
    (g,) = client.request(9, 9, require_stable=False, groups=[
        {"group_id": group, "member_id": member_id, "member_epoch": epoch, "topics": None}]).groups
    return g
