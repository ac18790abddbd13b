"""Group members made of kafka-python KafkaConsumers (group_scenarios.py drives them)."""

from __future__ import annotations

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from compat_tests.helpers import group_scenarios as gs


class KafkaPythonMember(gs.GroupMember):
    def __init__(self, bootstrap: str, topic: str, group: str, name: str) -> None:
        self.name, self.topic = name, topic
        self.consumer = KafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, client_id=name,
            enable_auto_commit=False, auto_offset_reset="earliest",
            session_timeout_ms=gs.SESSION_TIMEOUT_MS, heartbeat_interval_ms=gs.HEARTBEAT_MS,
            request_timeout_ms=15000)

    def poll(self, timeout_s):
        batches = self.consumer.poll(timeout_ms=int(timeout_s * 1000))
        return [(m.partition, m.offset, m.value) for msgs in batches.values() for m in msgs]

    def assignment(self):
        return {tp.partition for tp in self.consumer.assignment() if tp.topic == self.topic}

    def commit(self):
        try:
            self.consumer.commit(timeout_ms=10000)
            return True
        except KafkaError:  # CommitFailedError, RebalanceInProgressError, ...
            return False

    def commit_offsets(self, offsets):
        self.consumer.commit({TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1)
                              for p, o in offsets.items()}, timeout_ms=10000)

    def committed(self, partitions):
        return {p: self.consumer.committed(TopicPartition(self.topic, p), timeout_ms=10000) for p in partitions}

    def close(self):
        self.consumer.close(autocommit=False, timeout_ms=5000)


def make_member(bootstrap: str, topic: str, group: str, name: str) -> KafkaPythonMember:
    return KafkaPythonMember(bootstrap, topic, group, name)
