"""One client pipelining heavy requests does not hold every other connection behind its queue.

A connection reads its pipelined frames in one go and serves them in order; before, it served
them all without handing the event loop back, so another connection's request (here an
ApiVersions on a connection already open) was not even read until the whole queue was done:
forty Metadata answers of a 3,000-partition topic, about a second. Now the connection yields
every SERVE_SLICE_S (broker/net/server.py), and the other request is answered while the queue
is still being served. The test asserts that order, not a time: the other answer arrives before
the pipelining client's last.
"""

from __future__ import annotations

import threading
import time

import pytest

from compat_tests.helpers.raw_kafka import REF, Client, RawKafka, build_request, encode_request
from compat_tests.helpers.topics import unique_topic

pytestmark = pytest.mark.timeout(120)

PARTITIONS = 3_000
PIPELINED = 40


def test_another_connection_is_answered_while_a_pipelined_queue_is_served(broker):
    topic = unique_topic("wide")
    with Client.to(broker, timeout=60) as admin:
        admin.create_topic(topic, PARTITIONS)
        assert len(admin.metadata([topic]).topics[0].partitions) == PARTITIONS
    metadata = build_request(3, REF["metadata"], topics=[{"name": topic, "topic_id": None}],
                             allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                             include_topic_authorized_operations=False)
    with RawKafka.to(broker, timeout=60) as heavy, RawKafka.to(broker, timeout=60) as other:
        other.request(18, 0)  # both connections open and served once before the burst
        heavy.call(metadata)
        arrived = []

        def read_heavy() -> None:  # keeps the socket drained, so the broker never waits to write
            for _ in range(PIPELINED):
                heavy.recv_payload()
                arrived.append(time.monotonic())

        reader = threading.Thread(target=read_heavy)
        reader.start()
        heavy.send_bytes(b"".join(encode_request(metadata, 100 + i, heavy.client_id) for i in range(PIPELINED)))
        other.request(18, 0)
        other_answered = time.monotonic()
        reader.join(60)
    assert len(arrived) == PIPELINED
    assert other_answered < arrived[-1], (
        f"the other connection was answered {other_answered - arrived[-1]:.3f} s after the pipelined queue's "
        f"last answer ({arrived[-1] - arrived[0]:.3f} s from its first)")
