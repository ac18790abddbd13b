"""What one Fetch may make the broker do (issue 13 item 5), both storage layouts.

- A partition named many times in one request is read once, as Kafka reads a fetch request
  into a map keyed by topic-partition: the probe's 6,652-byte Fetch listing one partition 200
  times stalled the commitlog layout 56 s and built 200 copies of the answer.
- max_bytes is capped by the broker's fetch.max.bytes (Kafka's 55 MiB default), so a client's
  2^31-1 does not make one response, and the reads behind it, unbounded.
"""

from __future__ import annotations

import pytest

from compat_tests.helpers.raw_kafka import Client, fetch_values, make_batch, split_batches
from compat_tests.helpers.topics import unique_topic

pytestmark = pytest.mark.timeout(120)

FETCH_VERSION = 12


def test_a_partition_named_many_times_is_read_once(broker):
    topic = unique_topic("dupfetch")
    with Client(broker.host, broker.port) as c:
        c.create_topic(topic, 1)
        for i in range(20):
            assert c.produce(topic, 0, make_batch([b"r%d" % i])).error_code == 0
        values = fetch_values([(topic, [(0, 0, 1 << 20)] * 200)], max_bytes=2**31 - 1)
        resp = c.request(1, FETCH_VERSION, **values)
    (t,) = resp.responses
    assert len(t.partitions) == 1, f"{len(t.partitions)} answers for one partition"
    batches, _ = split_batches(t.partitions[0].records)
    assert len(batches) == 20


def test_fetch_max_bytes_caps_what_a_client_asks(broker_factory):
    broker = broker_factory("--fetch-max-bytes", str(1 << 20))
    topic = unique_topic("capfetch")
    with Client(broker.host, broker.port) as c:
        c.create_topic(topic, 1)
        for i in range(6):
            assert c.produce(topic, 0, make_batch([bytes([i]) * (300 << 10)])).error_code == 0
        values = fetch_values([(topic, [(0, 0, 2**31 - 1)])], max_bytes=2**31 - 1)
        resp = c.request(1, FETCH_VERSION, **values)
    (p,) = resp.responses[0].partitions
    size = len(p.records or b"")
    assert 0 < size <= 1 << 20, f"{size} bytes answered with fetch.max.bytes 1 MiB"
