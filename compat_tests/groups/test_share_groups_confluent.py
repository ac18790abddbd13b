"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka; confluent-kafka 2.16.1,
the newest on PyPI, has it), in both storage layouts, against the broker and helpers of
test_share_groups_java.py (its module broker: earliest, 8 s locks, delivery limit 5).

Two consumers of one group share a partition, each record accepted once between them and a
REJECTed one never delivered again; and a group's own share.delivery.count.limit, set and
described with confluent-kafka's AdminClient (ResourceType.GROUP, which librdkafka sends as the
config resource type GROUP, 32), archives a record the consumer keeps RELEASEing after that many
deliveries. Each consumer is used from the test's thread only
(the class is not thread-safe), polled in turn.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from compat_tests.helpers.java_share_members import produce
from compat_tests.helpers.topics import create_topic, unique_topic

pytestmark = pytest.mark.timeout(300)


class Member:
    """One ShareConsumer in explicit acknowledgement mode: `actions` says what to do with a value
    (accept by default); `seen` is every delivery, in order."""

    def __init__(self, bootstrap: str, topic: str, group: str, actions: dict[str, AcknowledgeType] | None = None):
        self.consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                       "share.acknowledgement.mode": "explicit", "client.id": "compat-share-cf"})
        self.consumer.subscribe([topic])
        self.actions = actions or {}
        self.seen: list[tuple[str, AcknowledgeType]] = []

    def poll_once(self) -> None:
        for message in self.consumer.poll(0.5) or ():
            assert message.error() is None, message.error()
            value = message.value().decode()
            action = self.actions.get(value, AcknowledgeType.ACCEPT)
            self.consumer.acknowledge(message, action)
            self.seen.append((value, action))
        self.consumer.commit_sync()

    def accepted(self) -> Counter:
        return Counter(v for v, a in self.seen if a == AcknowledgeType.ACCEPT)


@pytest.fixture
def members():
    started: list[Member] = []

    def start(*args, **kw) -> Member:
        started.append(Member(*args, **kw))
        return started[-1]

    yield start
    for m in started:
        m.consumer.close()


def poll_until(check, what: str, ms: list[Member], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s; seen " + \
            "; ".join(repr(m.seen) for m in ms)
        for m in ms:
            m.poll_once()


def test_two_consumers_share_a_partition_and_a_rejected_record_stays_gone(sbroker, members):
    topic = create_topic(sbroker.bootstrap, unique_topic("share-cf"), 1)
    group = unique_topic("share-cf-g")
    values = [f"v-{i}" for i in range(40)] + ["bad"]
    produce(sbroker.bootstrap, topic, values, one_per_batch=True)
    ms = [members(sbroker.bootstrap, topic, group, {"bad": AcknowledgeType.REJECT}) for _ in range(2)]
    poll_until(lambda: set(sum((m.accepted() for m in ms), Counter())) == set(values) - {"bad"},
               "every record but 'bad' accepted", ms)
    produce(sbroker.bootstrap, topic, ["after"])
    poll_until(lambda: any("after" in m.accepted() for m in ms), "'after' accepted", ms)
    deliveries = Counter(v for m in ms for v, _ in m.seen)
    assert all(deliveries[v] == 1 for v in values + ["after"]), {v: n for v, n in deliveries.items() if n != 1}


def test_a_groups_own_delivery_limit_binds_a_confluent_consumer(sbroker, members):
    topic = create_topic(sbroker.bootstrap, unique_topic("share-cf-limit"), 1)
    group = unique_topic("share-cf-limit-g")
    admin = AdminClient({"bootstrap.servers": sbroker.bootstrap})
    limit = ConfigEntry("share.delivery.count.limit", "3", incremental_operation=AlterConfigOpType.SET)
    for future in admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group,
                                                                  incremental_configs=[limit])]).values():
        future.result(30)
    (described,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
    assert described.result(30)["share.delivery.count.limit"].value == "3"
    produce(sbroker.bootstrap, topic, ["poison"])
    m = members(sbroker.bootstrap, topic, group, {"poison": AcknowledgeType.RELEASE})
    poll_until(lambda: sum(1 for v, _ in m.seen if v == "poison") >= 3, "poison delivered 3 times", [m])
    produce(sbroker.bootstrap, topic, ["after"])
    poll_until(lambda: "after" in m.accepted(), "'after' accepted", [m])
    assert sum(1 for v, _ in m.seen if v == "poison") == 3, m.seen  # the broker's limit is 5
