"""confluent-kafka group members with group.protocol=consumer (KIP-848)."""

from __future__ import annotations

from compat_tests.helpers.confluent_group_members import ConfluentMember


class ConsumerProtocolMember(ConfluentMember):
    group_settings = {"group.protocol": "consumer", "topic.metadata.refresh.interval.ms": 1000}


def make_member(bootstrap: str, topic: str, group: str, name: str) -> ConsumerProtocolMember:
    return ConsumerProtocolMember(bootstrap, topic, group, name)
