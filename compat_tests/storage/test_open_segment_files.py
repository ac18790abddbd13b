"""Both layouts hold a bounded number of files open, whatever the partition count (issue 13
item 4).

A broker started under RLIMIT_NOFILE 1,024 (prlimit) gets a 2,000-partition topic: three segment
files a partition (segment layout), or two consume-queue files (commitlog layout), held open
forever would need 6,000 or 4,000 descriptors. With them opened when used and closed when idle
(segment/open_files.py, one bound for both layouts, default half the limit: 512), the topic is
created, confluent-kafka writes one record to every partition and reads every one back, the
broker still accepts new connections, and /proc/<pid>/fd shows at most 512 such files open.
Before: CreateTopics ran out of descriptors ("Too many open files") after ~330 partitions
(segment) and ~500 (commitlog).
"""

from __future__ import annotations

import os
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.helpers.broker_process import BrokerProcess, api_versions_roundtrip
from compat_tests.helpers.topics import unique_topic

pytestmark = pytest.mark.timeout(240)

NOFILE = 1024
PARTITIONS = 2000
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex")
LAYOUTS = ["segment", "commitlog"]


class LimitedBroker(BrokerProcess):
    """A broker whose RLIMIT_NOFILE is `NOFILE` (prlimit execs it: same pid)."""

    def command(self) -> list[str]:
        return ["prlimit", f"--nofile={NOFILE}:{NOFILE}", "--", *super().command()]


@pytest.fixture(params=LAYOUTS)
def limited_broker(request):
    broker = LimitedBroker(storage_mode=request.param)
    broker.start()
    yield broker
    broker.cleanup()


def open_fds(pid: int) -> list[str]:
    out = []
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            out.append(os.readlink(f"/proc/{pid}/fd/{name}"))
        except OSError:
            pass  # closed while listing
    return out


def partition_files(fds: list[str], data_dir, layout: str) -> list[str]:
    """The per-partition files among `fds`: segments' or consume queues' (the commitlog's own
    files and its key index are few and stay open outside the bound, and so is the one
    producer-state snapshot being written at a time, `<offset>.snapshot[.tmp]`, in either layout)."""
    if layout == "commitlog":
        return [p for p in fds if p.startswith(f"{data_dir}/commitlog-store/consumequeue/")
                and ".snapshot" not in p.rsplit("/", 1)[-1]]
    return [p for p in fds if p.startswith(str(data_dir)) and p.removesuffix(" (deleted)").endswith(SEGMENT_SUFFIXES)]


def test_more_partitions_than_descriptors(limited_broker):
    broker = limited_broker
    topic = unique_topic("fds")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)], request_timeout=120)[topic].result(timeout=150)

    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20, "acks": "all",
                         "enable.idempotence": False, "message.timeout.ms": 60000})
    failures = []
    for p in range(PARTITIONS):
        producer.produce(topic, value=b"value-%d" % p, partition=p,
                         on_delivery=lambda err, _msg: err and failures.append(err))
        producer.poll(0)
    assert producer.flush(90) == 0 and not failures, failures[:3]

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"fds-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    got: dict[int, bytes] = {}
    try:
        for _ in range(600):
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                assert msg.error() is None or msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                if msg.error() is None:
                    got[msg.partition()] = msg.value()
            if len(got) == PARTITIONS:
                break
    finally:
        consumer.close()
    assert got == {p: b"value-%d" % p for p in range(PARTITIONS)}

    api_versions_roundtrip(broker.host, broker.port)  # new connections are still accepted
    fds = open_fds(broker.pid)
    held = partition_files(fds, broker.data_dir, broker.storage_mode)
    assert NOFILE // 4 < len(held) <= NOFILE // 2, len(held)  # used up to the bound, never past it
    assert len(fds) < NOFILE - 100, len(fds)
