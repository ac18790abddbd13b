"""A client that ends its side of the connection cleanly (FIN) after sending requests: what it
sent is still served, as Kafka's Selector serves the completed receives of a closing channel.
An acks=0 producer (kcat -X acks=0, a fire-and-forget script) writes and exits at once; none of
its records may be dropped because the broker saw the end of the stream before it read them.

The durable client half-closes (shutdown SHUT_WR) and waits for the broker to close its side
before it closes the socket: a socket closed with answers unread in its buffer is reset (RST)
by the kernel, which throws away what the broker had not read from its own socket yet."""

from __future__ import annotations

import socket

from compat_tests.helpers.raw_kafka import REF, Client, build_request, encode_request, make_batch, read_records
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

REQUESTS = 3000


def _produce(topic: str, value: bytes, acks: int):
    return build_request(0, REF["produce"], transactional_id=None, acks=acks, timeout=10_000,
                         topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": make_batch([value])}]}])


def test_acks0_requests_sent_before_a_clean_close_are_all_stored(fresh_broker):
    """3,000 acks=0 produce requests in one write, then close: the broker reads the frames and the
    end of the stream together, and still appends every one, in order."""
    topic = unique_topic("acks0close")
    with Client.to(fresh_broker) as admin:
        admin.create_topic(topic, 1)
    with Client.to(fresh_broker) as c:
        c.send_bytes(b"".join(encode_request(_produce(topic, b"v%d" % i, acks=0), i, c.client_id)
                              for i in range(REQUESTS)))
    with Client.to(fresh_broker) as reader:
        wait_until(lambda: reader.log_end_offset(topic) == REQUESTS, f"all {REQUESTS} records stored")
        values = []
        while len(values) < REQUESTS:  # a fetch answers part of the log at a time
            records = read_records(bytes(reader.fetch(topic, 0, len(values)).records or b""))
            values += [v for offset, _t, _k, v in records if offset >= len(values)]
        assert values == [b"v%d" % i for i in range(REQUESTS)]


def test_durable_requests_sent_before_a_clean_close_are_all_published(fresh_broker):
    """flush.messages=1, acks=all: 100 requests whose answers the client never waits for. Each is
    appended, fsynced and published although nobody is left to answer."""
    topic = unique_topic("durableclose")
    with Client.to(fresh_broker) as admin:
        admin.create_topic(topic, 1, {"flush.messages": "1"})
    with Client.to(fresh_broker) as c:
        c.send_bytes(b"".join(encode_request(_produce(topic, b"d%d" % i, acks=-1), i, c.client_id)
                              for i in range(100)))
        c.sock.shutdown(socket.SHUT_WR)
        assert c.closed_by_peer(), "the broker did not close its side after the client's"
    with Client.to(fresh_broker) as reader:
        wait_until(lambda: reader.log_end_offset(topic) == 100, "all 100 records published")
        values = [v for _o, _t, _k, v in read_records(reader.stored_bytes(topic))]
        assert values == [b"d%d" % i for i in range(100)]
