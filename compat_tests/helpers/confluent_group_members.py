"""Group members made of confluent-kafka Consumers (group_scenarios.py drives them)."""

from __future__ import annotations

from confluent_kafka import Consumer, KafkaException, TopicPartition

from compat_tests.helpers import group_scenarios as gs


def consumer(bootstrap: str, group: str, name: str, group_settings: dict) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest", **group_settings})


class ConfluentMember(gs.GroupMember):
    # The classic protocol's timings; a member of the consumer protocol takes the broker's.
    group_settings = {"session.timeout.ms": gs.SESSION_TIMEOUT_MS, "heartbeat.interval.ms": gs.HEARTBEAT_MS,
                      "topic.metadata.refresh.interval.ms": 5000}

    def __init__(self, bootstrap: str, topic: str, group: str, name: str) -> None:
        self.name, self.topic = name, topic
        self.consumer = consumer(bootstrap, group, name, self.group_settings)
        self.consumer.subscribe([topic])

    def poll(self, timeout_s):
        out = []
        for msg in self.consumer.consume(num_messages=500, timeout=timeout_s):
            if msg.error():
                raise KafkaException(msg.error())
            out.append((msg.partition(), msg.offset(), msg.value()))
        return out

    def assignment(self):
        return {tp.partition for tp in self.consumer.assignment() if tp.topic == self.topic}

    def commit(self):
        try:
            results = self.consumer.commit(asynchronous=False)
        except KafkaException:  # REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, STALE_MEMBER_EPOCH, _NO_OFFSET, ...
            return False
        return all(tp.error is None for tp in results or [])

    def commit_offsets(self, offsets):
        results = self.consumer.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in offsets.items()],
                                       asynchronous=False)
        errors = [tp for tp in results if tp.error is not None]
        assert not errors, errors

    def committed(self, partitions):
        got = self.consumer.committed([TopicPartition(self.topic, p) for p in partitions], timeout=10)
        return {tp.partition: (tp.offset if tp.offset >= 0 else None) for tp in got}

    def close(self):
        self.consumer.close()


def make_member(bootstrap: str, topic: str, group: str, name: str) -> ConfluentMember:
    return ConfluentMember(bootstrap, topic, group, name)
