"""Streams groups (KIP-1071) through the real Java client's classes (kafka-clients 4.3.0): the
StreamsGroupHeartbeatRequest / Response that Kafka Streams' heartbeat manager sends and parses,
built and read by the client's own code (java/StreamsCheck.java), and the Java Admin's
describeStreamsGroups and listGroups of type streams. The Kafka Streams jar itself is not on this
machine, so the members are driven by hand as its heartbeat manager drives them.
"""

from __future__ import annotations

import uuid

import pytest

from compat_tests.helpers.java_client import JavaClient
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import unique_topic

pytestmark = pytest.mark.timeout(300)

MISSING_INTERNAL_TOPICS = 3
BROKER_ARGS = ["--group-streams-num-standby-replicas", "1"]


class StreamsCheck(JavaClient):
    """ops heartbeat, describe, list (java/StreamsCheck.java says what each takes and answers)."""

    main_class = "StreamsCheck"


class JavaMember:
    """A member whose heartbeats the Java client's classes write and read."""

    def __init__(self, java: StreamsCheck, group: str, source: str):
        self.java, self.group, self.source = java, group, source
        self.member_id, self.process = str(uuid.uuid4()), str(uuid.uuid4())
        self.epoch, self.active, self.standby = 0, [], []

    def heartbeat(self) -> dict:
        r = self.java.call("heartbeat", group=self.group, member=self.member_id, epoch=self.epoch,
                           process=self.process, source=self.source, changelog=f"{self.group}-store-changelog",
                           active=self.active, standby=self.standby)
        assert r["error"] == 0, r
        self.epoch = r["epoch"]
        if r["active"] is not None:
            self.active, self.standby = r["active"], r["standby"]
        return r


def test_java_clients_heartbeat_and_admin_see_the_assignment(broker):
    group, source = f"app-{uuid.uuid4().hex[:12]}", unique_topic("streams-java")
    with Client.to(broker) as raw:
        raw.create_topic(source, partitions=4)
    with StreamsCheck(broker.bootstrap) as java:
        a, b = JavaMember(java, group, source), JavaMember(java, group, source)
        first = a.heartbeat()
        assert first["status"] == [[MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {group}-store-changelog"]]
        assert first["warmup"] == [] and first["active"] == []
        a.heartbeat()
        assert a.active == [0, 1, 2, 3]
        b.heartbeat()
        for _ in range(4):
            a.heartbeat()
            b.heartbeat()
            assert not set(a.active) & set(b.active)
        assert sorted(a.active + b.active) == [0, 1, 2, 3] and len(a.active) == 2
        assert a.standby == b.active and b.standby == a.active
        d = java.call("describe", group=group)
        assert (d["state"], d["groupEpoch"], d["assignmentEpoch"], d["topologyEpoch"]) == ("Stable", 3, 3, 1)
        assert d["subtopologies"] == {"0": {"sources": [source], "changelogs": {f"{group}-store-changelog": 4}}}
        assert d["members"] == {a.member_id: {"process": a.process, "active": a.active, "standby": a.standby},
                                b.member_id: {"process": b.process, "active": b.active, "standby": b.standby}}
        assert [group, "Streams", "streams"] in java.call("list")
