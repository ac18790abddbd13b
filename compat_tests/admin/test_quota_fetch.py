"""A consumer's Fetch against its quotas, over raw sockets, as Kafka's handleFetchRequest has it:

- its max_bytes is capped to what its consumer_byte_rate lets through in one quota window
  (getMaxValueInQuotaWindow: the quota over every sample but the current one), min_bytes with
  it, so a consumer is not asked for more than it may take and answered empty forever;
- a fetch over request_percentage is answered empty with the throttle time, as one over
  consumer_byte_rate is (the client fetches the same data again once it may).

The broker runs with quota.window.num=3: a consumer_byte_rate of Q lets 2 * Q bytes through at once.
"""

from __future__ import annotations

import time
import uuid

import pytest

from compat_tests.helpers.quota_broker import quota_broker, set_quota
from compat_tests.helpers.raw_kafka import Client, fetch_values, make_batch, split_batches
from compat_tests.helpers.topics import unique_topic

FETCH_VERSION = 12  # by topic name


@pytest.fixture(scope="module")
def broker():
    yield from quota_broker()


def _topic_of_batches(broker, count: int, value_size: int) -> str:
    """A topic whose partition 0 holds `count` batches of one `value_size`-byte record each."""
    topic = unique_topic("qfetch")
    with Client.to(broker) as c:
        c.create_topic(topic)
        for _ in range(count):
            assert c.produce(topic, 0, make_batch([b"f" * value_size])).error_code == 0
    return topic


def _fetch(c, topic, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20):
    return c.request(1, FETCH_VERSION, **fetch_values([(topic, [(0, 0, 1 << 20)])], max_wait_ms, min_bytes, max_bytes))


def test_a_consumer_fetch_is_capped_to_one_quota_window(broker):
    topic = _topic_of_batches(broker, 10, 9_000)  # 10 batches of ~9,070 bytes
    client = f"cap-{uuid.uuid4().hex[:6]}"
    set_quota(broker, {"client-id": client}, consumer_byte_rate=10_000)  # 20,000 bytes at once
    with Client.to(broker, client_id=client) as c:
        r = _fetch(c, topic)
    # Uncapped it would read all ~90 KB, be over the quota and so be answered empty.
    assert r.throttle_time.total_seconds() == 0, r.throttle_time
    (t,) = r.responses
    records = t.partitions[0].records
    batches, _ = split_batches(records)
    assert len(batches) == 2 and len(records) <= 20_000, (len(batches), len(records))
    with Client.to(broker) as free:  # no quota: no cap
        (t,) = _fetch(free, topic).responses
        assert len(split_batches(t.partitions[0].records)[0]) == 10


def test_min_bytes_is_capped_with_max_bytes(broker):
    topic = _topic_of_batches(broker, 1, 25_000)  # one batch, larger than the window allows
    client = f"minb-{uuid.uuid4().hex[:6]}"
    set_quota(broker, {"client-id": client}, consumer_byte_rate=10_000)  # 20,000 bytes at once
    with Client.to(broker, client_id=client) as c:
        started = time.monotonic()
        r = _fetch(c, topic, max_wait_ms=5_000, min_bytes=50_000)
        answered_s = time.monotonic() - started
    # min_bytes 50,000 capped to 20,000: the 25,000-byte batch (a first batch is read whole)
    # is enough, so no waiting out max_wait; over the quota, the answer is empty.
    assert answered_s < 2.5, answered_s
    assert r.throttle_time.total_seconds() > 0 and r.responses == (), r


def test_a_fetch_over_request_percentage_carries_no_data(broker):
    topic = _topic_of_batches(broker, 20, 1_000)
    client = f"busy-{uuid.uuid4().hex[:6]}"
    set_quota(broker, {"client-id": client}, request_percentage=0.01)  # 0.1 ms of handler time a second
    with Client.to(broker, client_id=client) as c:
        for _ in range(40):  # a fetch of 20 batches takes well over 0.2 ms (2 s of allowance)
            r = _fetch(c, topic)
            if r.throttle_time.total_seconds() > 0:
                break
        else:
            pytest.fail("never throttled by request_percentage")
    assert 0 < r.throttle_time.total_seconds() <= 1.0  # a request-time throttle is one window at most
    assert r.responses == (), r  # as Kafka: throttled, the fetch is answered empty
    with Client.to(broker) as free:  # the data is there for a client without the quota
        (t,) = _fetch(free, topic).responses
        assert len(split_batches(t.partitions[0].records)[0]) == 20
