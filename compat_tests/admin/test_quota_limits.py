"""The quotas that are not byte rates, over raw sockets: controller_mutation_rate (KIP-599's token
bucket: CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+ refuse a topic asked for while
the client is over it with THROTTLING_QUOTA_EXCEEDED, older versions create it and are only
throttled) and connection_creation_rate per ip (a connection over it is closed unanswered), the
ip given as an address or as a host name.

The broker runs with quota.window.num=3, so a mutation quota of Q banks 3 * Q partitions.
"""

from __future__ import annotations

import socket
import time
import uuid

import pytest

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.quota_broker import SAMPLES, quota_broker, set_quota
from compat_tests.helpers.raw_kafka import Client, RawKafka, build_request

NONE, THROTTLING_QUOTA_EXCEEDED = 0, 89


@pytest.fixture(scope="module")
def broker():
    yield from quota_broker()


def _create(c, version, *topics: tuple[str, int]):
    r = c.request(19, version, timeout=10_000, validate_only=False, topics=[
        {"name": n, "num_partitions": p, "replication_factor": 1, "assignments": [], "configs": []} for n, p in topics])
    return [t.error_code for t in r.topics], r.throttle_time.total_seconds()


@pytest.mark.parametrize("version,strict", [(7, True), (6, True), (5, False)])
def test_create_topics_over_the_mutation_rate(broker, version, strict):
    client = f"mut-{version}-{uuid.uuid4().hex[:6]}"
    set_quota(broker, {"client-id": client}, controller_mutation_rate=2)  # 6 partitions banked
    with Client.to(broker, client_id=client) as c:
        tag = uuid.uuid4().hex[:6]
        sent = time.monotonic()
        codes, throttle = _create(c, version, (f"big-{tag}", 10), (f"next-{tag}", 1))
        took = time.monotonic() - sent
        assert codes == ([NONE, THROTTLING_QUOTA_EXCEEDED] if strict else [NONE, NONE])
        # 10 (11) partitions from a bucket of 6 at 2 a second: 2 s (2.5 s) until it is back at
        # zero, less what refilled while the topics were being created (as Kafka's
        # ControllerMutationQuota.throttleTime deducts the time since it was recorded)
        expected = 2.0 if strict else 2.5
        assert expected - took - 0.1 <= throttle <= expected + 0.1


def test_delete_topics_and_create_partitions_over_the_mutation_rate(broker):
    client = f"mut-del-{uuid.uuid4().hex[:6]}"
    tag = uuid.uuid4().hex[:6]
    with Client.to(broker) as c:  # unthrottled: the topics to delete and grow
        assert _create(c, 7, (f"a-{tag}", 8), (f"b-{tag}", 1), (f"c-{tag}", 1))[0] == [NONE] * 3
    set_quota(broker, {"client-id": client}, controller_mutation_rate=2)
    with Client.to(broker, client_id=client) as c:
        sent = time.monotonic()
        r = c.request(20, 6, timeout=10_000, topics=[{"name": f"a-{tag}", "topic_id": None},
                                                         {"name": f"b-{tag}", "topic_id": None}])
        took = time.monotonic() - sent
        assert [x.error_code for x in r.responses] == [NONE, THROTTLING_QUOTA_EXCEEDED]
        assert 1.0 - took - 0.1 <= r.throttle_time.total_seconds() <= 1.1  # as in the test above
        # muted for that second, so this is served once the bucket is back at zero: c's 8 new
        # partitions go, b's 1 finds it below zero again
        grow = c.request(37, 3, timeout=10_000, validate_only=False, topics=[
            {"name": f"c-{tag}", "count": 9, "assignments": None},
            {"name": f"b-{tag}", "count": 2, "assignments": None}])
        assert [x.error_code for x in grow.results] == [NONE, THROTTLING_QUOTA_EXCEEDED]
        assert grow.throttle_time.total_seconds() > 0


def _connect_from(broker, source: str) -> socket.socket:
    return socket.create_connection((broker.host, broker.port), timeout=5, source_address=(source, 0))


def _answered_and_closed(broker, source: str, connections: int = 8) -> tuple[int, int]:
    """Opens `connections` connections from `source`, one after another, each asking ApiVersions:
    how many were answered, how many closed unanswered."""
    answered, closed = 0, 0
    for _ in range(connections):
        with _connect_from(broker, source) as sock:
            raw = RawKafka.__new__(RawKafka)
            raw.sock, raw.client_id, raw.timeout, raw._next_id = sock, "ip-test", 5.0, 1
            cid = raw.send(build_request(18, 3, client_software_name="t", client_software_version="1"))
            try:
                raw.recv(18, 3, cid, timeout=3)
                answered += 1
            except ConnectionError:
                closed += 1
    return answered, closed


def test_connections_over_the_ip_rate_are_closed_unanswered(broker):
    set_quota(broker, {"ip": "127.0.0.2"}, connection_creation_rate=2)  # 2 s of first window: 4 connections
    assert _answered_and_closed(broker, "127.0.0.2") == (4, 4)
    with Client.to(broker) as other:  # another ip is not held back
        assert other.request(18, 3, client_software_name="o", client_software_version="1").error_code == NONE


def test_an_ip_quota_set_by_host_name_holds_the_address_it_resolves_to():
    """As Kafka's broker: `localhost` resolved when the quota is set (InetAddress.getByName, IPv4
    first) holds connections from 127.0.0.1. Its own broker: the quota holds every test client."""
    proc = BrokerProcess(extra_args=["--quota-window-num", str(SAMPLES)])
    try:
        proc.start()
        set_quota(proc, {"ip": "localhost"}, connection_creation_rate=2)
        assert _answered_and_closed(proc, "127.0.0.1") == (4, 4)
        assert _answered_and_closed(proc, "127.0.0.3", 1) == (1, 0)  # another address is not held
    finally:
        proc.cleanup()
