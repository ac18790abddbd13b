"""A share-group member that dies gives its records back at once (KIP-932, as Kafka's leaders do):
its share sessions belong to the connections that opened them, and when a connection closes
without the session being closed first (no ShareFetch or ShareAcknowledge at epoch -1: the
client was killed, and its kernel closed its sockets), the broker ends those sessions and makes
the member's acquired records Available again, their delivery counts kept. Without that they
would come back only when their locks run out, or when the group coordinator drops the member at
its session timeout.

Both are 60 s here (the group's share.record.lock.duration.ms, set with IncrementalAlterConfigs;
the broker's group.share.session.timeout.ms), and another member must get the dead member's
records at their second delivery well within half of that: a raw-protocol member whose socket is
closed, and the Java client's KafkaShareConsumer killed with SIGKILL. The cluster case (the
share-partition's leader not the group's coordinator) is test_cluster_share_groups.py's.
"""

from __future__ import annotations

import time

import pytest

from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.share_group_requests import join, new_group, partition_of
from compat_tests.helpers.share_handover import (
    BOUND_S, LOCK_MS, SHARE_FETCH, assert_a_member_s_records_go_to_another, set_group_config)
from compat_tests.helpers.topics import create_topic, unique_topic

pytestmark = pytest.mark.timeout(300)

BROKER_ARGS = ["--share-auto-offset-reset", "earliest", "--group-share-session-timeout-ms", str(LOCK_MS),
               "--group-share-heartbeat-interval-ms", "1000"]


def long_poll(client: Client, group: str, member: str, epoch: int, topic_id, wait_ms: int):
    """A ShareFetch that waits up to wait_ms for records it may acquire."""
    return client.request(SHARE_FETCH, 1, recv_timeout=wait_ms / 1000 + 15, group_id=group, member_id=member,
                          share_session_epoch=epoch, max_wait=wait_ms, min_bytes=1, max_bytes=1 << 20,
                          max_records=500, batch_size=500, forgotten_topics_data=[],
                          topics=[{"topic_id": topic_id, "partitions": [
                              {"partition_index": 0, "acknowledgement_batches": []}]}])


def acquired(resp) -> list[tuple[int, int, int]]:
    return [(r.first_offset, r.last_offset, r.delivery_count) for r in partition_of(resp).acquired_records]


def test_a_raw_member_whose_connection_closes_gives_its_records_back_at_once(broker):
    topic, group = unique_topic("share-gone-raw"), new_group()
    set_group_config(broker.host, broker.port, group, "share.record.lock.duration.ms", str(LOCK_MS))
    with Client.to(broker) as survivor:
        topic_id = survivor.create_topic(topic)
        survivor.produced(topic, 0, make_batch([b"a", b"b", b"c"]))
        b, _ = join(survivor, group, topic)
        dying = Client.to(broker)
        a, _ = join(dying, group, topic)
        assert acquired(long_poll(dying, group, a, 0, topic_id, 0)) == [(0, 2, 1)]
        assert acquired(long_poll(survivor, group, b, 0, topic_id, 0)) == []  # a holds them all
        dying.close()  # no ShareFetch at epoch -1: the broker sees the socket close, nothing else
        closed_at = time.monotonic()
        taken = long_poll(survivor, group, b, 1, topic_id, int(BOUND_S * 1000))
        waited = time.monotonic() - closed_at
        assert acquired(taken) == [(0, 2, 2)], (taken, waited)  # the first delivery counted
        assert waited < BOUND_S, waited


def test_a_killed_java_member_s_records_go_to_the_next_member_at_once(broker, members):  # noqa: F811
    topic, group = create_topic(broker.bootstrap, unique_topic("share-gone"), 1), new_group()
    set_group_config(broker.host, broker.port, group, "share.record.lock.duration.ms", str(LOCK_MS))
    assert_a_member_s_records_go_to_another(broker.bootstrap, topic, group, members, "killed")


