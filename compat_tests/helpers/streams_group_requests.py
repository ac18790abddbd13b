"""A KIP-1071 streams group member driven by hand over raw requests (StreamsGroupHeartbeat)."""

from __future__ import annotations

import uuid

from compat_tests.helpers.raw_kafka import Client

NONE, INVALID_REQUEST, UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND, FENCED_MEMBER_EPOCH = 0, 42, 25, 69, 110
HEARTBEAT, DESCRIBE = 88, 89


def stateful_topology(source: str, app: str, epoch: int = 1) -> dict:
    """One subtopology reading `source`, keeping a store: a changelog, as an aggregation has."""
    return {"epoch": epoch, "subtopologies": [{
        "subtopology_id": "0", "source_topics": [source], "source_topic_regex": [],
        "state_changelog_topics": [{"name": f"{app}-store-changelog", "partitions": 0, "replication_factor": 0,
                                    "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}],
        "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}]}


def tasks_of(ids) -> set[tuple[str, int]]:
    return {(t.subtopology_id, p) for t in ids or () for p in t.partitions}


def as_ids(tasks: set[tuple[str, int]]) -> list[dict]:
    by: dict[str, list[int]] = {}
    for s, p in sorted(tasks):
        by.setdefault(s, []).append(p)
    return [{"subtopology_id": s, "partitions": ps} for s, ps in by.items()]


class Member:
    """One streams member driven by hand: it owns what its last answer assigned."""

    def __init__(self, client: Client, group: str, topology: dict, version: int = 0, process: str | None = None):
        self.client, self.group, self.topology, self.version = client, group, topology, version
        self.member_id = str(uuid.uuid4())
        self.process = process or str(uuid.uuid4())
        self.epoch = 0
        self.active: set[tuple[str, int]] = set()
        self.standby: set[tuple[str, int]] = set()
        self.last = None

    def request(self, epoch: int | None = None, **override):
        values = dict(group_id=self.group, member_id=self.member_id,
                      member_epoch=self.epoch if epoch is None else epoch, endpoint_information_epoch=0,
                      instance_id=None, rack_id=None, rebalance_timeout=-1, topology=None,
                      active_tasks=as_ids(self.active), standby_tasks=as_ids(self.standby), warmup_tasks=[],
                      process_id=None, user_endpoint=None, client_tags=None, task_offsets=None,
                      task_end_offsets=None, shutdown_application=False)
        if values["member_epoch"] == 0:
            values.update(rebalance_timeout=30_000, topology=self.topology, active_tasks=[], standby_tasks=[],
                          warmup_tasks=[], process_id=self.process, client_tags=[])
        values.update(override)
        return self.client.request(HEARTBEAT, self.version, **values)

    def heartbeat(self, **kw):
        r = self.request(**kw)
        assert r.error_code == NONE, r
        self.epoch, self.last = r.member_epoch, r
        if r.active_tasks is not None:
            self.active, self.standby = tasks_of(r.active_tasks), tasks_of(r.standby_tasks)
        return r

    def join(self):
        self.epoch = 0
        return self.heartbeat()

    def leave(self):
        r = self.request(epoch=-1)
        assert (r.error_code, r.member_epoch) == (NONE, -1), r
        self.active, self.standby = set(), set()
        return r


def settle(*members: Member, rounds: int = 6) -> None:
    """Heartbeat each member in turn, checking no task ever runs active on two members nor
    active and standby on one."""
    for _ in range(rounds):
        for m in members:
            m.heartbeat()
            actives = [x.active for x in members]
            assert sum(len(a) for a in actives) == len(set().union(*actives)), "a task active twice"
            assert all(not (x.active & x.standby) for x in members), "active and standby on one member"


def describe(client: Client, group: str, version: int = 0):
    (g,) = client.request(DESCRIBE, version, group_ids=[group], include_authorized_operations=False).groups
    return g
