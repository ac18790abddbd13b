"""Fetch, every version we serve, over a raw socket: bytes read back at their offsets, whole
batches from the middle of one, OFFSET_OUT_OF_RANGE, long polls (woken by a produce, and holding
up only their own connection), size limits, and v13+ naming topics by id.

Split from test_protocol_versions.py, which keeps ApiVersions, Metadata, Produce and ListOffsets;
requests are built by compat_tests/helpers/raw_kafka.py with kio, so the bytes on the wire are those of
the version under test.
"""

from __future__ import annotations

import datetime
import time
import uuid

from compat_tests.helpers.raw_kafka import (
    Client, as_stored, build_request, fetch_values, make_batch, read_records, split_batches)
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic
from wire.protocol import SERVED_VERSIONS

NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_ID = 100

FETCH_BY_TOPIC_ID = 13  # KIP-516: Fetch v13+ names topics by id

ZERO_UUID = uuid.UUID(int=0)
NO_THROTTLE = datetime.timedelta(0)


def _fetch_values(client, version, topic, partitions, max_wait_ms=0, min_bytes=0, max_bytes=50 << 20):
    """Fetch values naming `topic` as `version` does: by name, or (v13+) by its topic id."""
    ids = {topic: client.topic_id(topic)} if version >= FETCH_BY_TOPIC_ID else None
    return fetch_values([(topic, partitions)], max_wait_ms, min_bytes, max_bytes, topic_ids=ids)


def _fetch(client, version, topic, partitions, max_wait_ms=0, min_bytes=0, max_bytes=50 << 20, timeout=None):
    """partitions: [(partition, offset, partition_max_bytes)] -> {partition: PartitionData}, and the response."""
    values = _fetch_values(client, version, topic, partitions, max_wait_ms, min_bytes, max_bytes)
    r = client.request(1, version, recv_timeout=timeout, **values)
    assert r.throttle_time == NO_THROTTLE
    if version >= 7:
        assert r.error_code == NONE and r.session_id == 0
    (t,) = r.responses
    if version >= FETCH_BY_TOPIC_ID:
        assert t.topic_id == values["topics"][0]["topic_id"]
    else:
        assert t.topic == topic
    out = {p.partition_index: p for p in t.partitions}
    assert sorted(out) == sorted(p for p, _, _ in partitions)
    return out


@over_versions(1)
def test_fetch_reads_back_bytes_with_assigned_offsets(client, version):
    name = unique_topic("fetch")
    client.create_topic(name)
    base_ts = int(time.time() * 1000) - 60_000
    b1 = make_batch([b"v0", None, b""], timestamps=[base_ts, base_ts + 1, base_ts + 2], keys=[b"k0", b"k1", None])
    b2 = make_batch([bytes(range(256)) * 4, b"last"], timestamps=[base_ts + 3, base_ts + 4])
    assert client.produced(name, 0, b1) == 0
    assert client.produced(name, 0, b2) == 3
    (md,) = client.metadata([name]).topics
    epoch = md.partitions[0].leader_epoch

    p = _fetch(client, version, name, [(0, 0, 1 << 20)])[0]
    assert p.error_code == NONE
    assert p.high_watermark == 5
    assert p.last_stable_offset == 5
    if version >= 5:
        assert p.log_start_offset == 0
    if version >= 11:
        assert p.preferred_read_replica == -1
    assert not p.aborted_transactions
    assert bytes(p.records) == as_stored(b1, 0, epoch) + as_stored(b2, 3, epoch)
    assert read_records(p.records) == [
        (0, base_ts, b"k0", b"v0"), (1, base_ts + 1, b"k1", None), (2, base_ts + 2, None, b""),
        (3, base_ts + 3, None, bytes(range(256)) * 4), (4, base_ts + 4, None, b"last")]

    # From the second batch's first offset: that batch only. At the end: nothing, no error.
    p = _fetch(client, version, name, [(0, 3, 1 << 20)])[0]
    assert (p.error_code, bytes(p.records)) == (NONE, as_stored(b2, 3, epoch))
    p = _fetch(client, version, name, [(0, 5, 1 << 20)])[0]
    assert p.error_code == NONE and not p.records and p.high_watermark == 5


@over_versions(1)
def test_fetch_from_middle_of_batch_returns_whole_batch(client, version):
    name = unique_topic("fetch-mid")
    client.create_topic(name)
    b1, b2 = make_batch([b"a", b"b"]), make_batch([b"c", b"d", b"e", b"f", b"g"])
    client.produced(name, 0, b1)
    assert client.produced(name, 0, b2) == 2
    p = _fetch(client, version, name, [(0, 4, 1 << 20)])[0]
    assert p.error_code == NONE
    complete, partial = split_batches(p.records)
    assert complete == [as_stored(b2, 2)] and partial == b""
    assert [r[0] for r in read_records(p.records)] == [2, 3, 4, 5, 6]


@over_versions(1)
def test_fetch_offset_out_of_range(client, version):
    name = unique_topic("fetch-oor")
    client.create_topic(name)
    client.produced(name, 0, make_batch([b"a", b"b", b"c"]))
    p = _fetch(client, version, name, [(0, 4, 1 << 20)])[0]
    assert p.error_code == OFFSET_OUT_OF_RANGE
    assert not p.records
    p = _fetch(client, version, name, [(0, 10_000, 1 << 20)])[0]
    assert p.error_code == OFFSET_OUT_OF_RANGE
    # The connection is fine and the exact end is not out of range.
    p = _fetch(client, version, name, [(0, 3, 1 << 20)])[0]
    assert p.error_code == NONE and not p.records


@over_versions(1)
def test_fetch_long_poll(broker, client, version):
    name = unique_topic("fetch-poll")
    client.create_topic(name)
    first = make_batch([b"already here"])
    client.produced(name, 0, first)

    # min_bytes not reachable: the broker waits max_wait, then returns what it has.
    t0 = time.monotonic()
    p = _fetch(client, version, name, [(0, 0, 1 << 20)], max_wait_ms=250, min_bytes=10 << 20)[0]
    waited = time.monotonic() - t0
    assert bytes(p.records) == as_stored(first, 0)
    assert 0.2 <= waited < 3.0, f"min_bytes unreachable: answered after {waited:.3f}s, max_wait 0.25s"

    # Nothing to read: it waits max_wait, then answers empty.
    t0 = time.monotonic()
    p = _fetch(client, version, name, [(0, 1, 1 << 20)], max_wait_ms=250, min_bytes=1)[0]
    waited = time.monotonic() - t0
    assert p.error_code == NONE and not p.records
    assert 0.2 <= waited < 3.0, f"empty long poll answered after {waited:.3f}s, max_wait 0.25s"

    # Data arriving from another connection ends the wait early.
    cid = client.send(build_request(1, version, **_fetch_values(client, version, name, [(0, 1, 1 << 20)], 10_000, 1)))
    assert client.no_reply_within(0.2), "answered a long poll before any data arrived"
    second = make_batch([b"late", b"arrival"])
    t0 = time.monotonic()
    with Client.to(broker) as producer:
        assert producer.produced(name, 0, second) == 1
    r = client.recv(1, version, cid, timeout=8.0)
    waited = time.monotonic() - t0
    assert waited < 2.0, f"long poll answered {waited:.3f}s after the produce (max_wait 10s)"
    (t,) = r.responses
    (p,) = t.partitions
    assert p.error_code == NONE and bytes(p.records) == as_stored(second, 1)


@over_versions(1)
def test_fetch_size_limits(client, version):
    name = unique_topic("fetch-limits")
    client.create_topic(name, 2)
    batches = {part: [make_batch([bytes([65 + part * 3 + i]) * 400]) for i in range(3)] for part in (0, 1)}
    for part in (0, 1):
        for i, b in enumerate(batches[part]):
            assert client.produced(name, part, b) == i
    stored = {part: [as_stored(b, i) for i, b in enumerate(batches[part])] for part in (0, 1)}
    size = len(stored[0][0])
    assert all(len(b) == size for bs in stored.values() for b in bs)

    def one(offset, pmb, max_bytes=50 << 20):
        p = _fetch(client, version, name, [(0, offset, pmb)], max_bytes=max_bytes)[0]
        assert p.error_code == NONE
        complete, partial = split_batches(p.records)
        assert len(p.records or b"") <= max(pmb, size) and len(p.records or b"") <= max(max_bytes, size)
        return complete, partial

    # partition_max_bytes: whole batches that fit (Kafka may append a partial one; clients drop it).
    assert one(0, size + size // 2)[0] == stored[0][:1]
    assert one(0, 2 * size + 10)[0] == stored[0][:2]
    assert one(0, 3 * size)[0] == stored[0]
    # The first batch is returned whole even when larger than either limit (KIP-74).
    assert one(0, 10) == (stored[0][:1], b"")
    assert one(1, 10) == (stored[0][1:2], b"")
    assert one(0, 1 << 20, max_bytes=10) == (stored[0][:1], b"")

    # max_bytes across partitions: the first partition takes what fits, later ones never overrun.
    ps = _fetch(client, version, name, [(0, 0, 1 << 20), (1, 0, 1 << 20)], max_bytes=size + size // 2)
    assert split_batches(ps[0].records)[0] == stored[0][:1]
    assert split_batches(ps[1].records)[0] == [] and len(ps[1].records or b"") <= size // 2
    ps = _fetch(client, version, name, [(0, 0, 1 << 20), (1, 0, 1 << 20)], max_bytes=2 * size + size // 2)
    assert split_batches(ps[0].records)[0] == stored[0][:2]
    assert split_batches(ps[1].records)[0] == []
    # A first partition with nothing to give leaves the "first batch" allowance to the next one.
    ps = _fetch(client, version, name, [(0, 3, 1 << 20), (1, 0, 1 << 20)], max_bytes=10)
    assert not ps[0].records
    assert split_batches(ps[1].records) == (stored[1][:1], b"")


@over_versions(1, lo=FETCH_BY_TOPIC_ID)
def test_fetch_by_topic_id(client, version):
    """KIP-516: a topic id the broker does not know is UNKNOWN_TOPIC_ID, echoed back by id,
    and the known topic beside it in the same request is served."""
    name = unique_topic("fetch-id")
    known = client.create_topic(name)
    assert known not in (None, ZERO_UUID)
    batch = make_batch([b"by id"])
    client.produced(name, 0, batch)
    stranger = uuid.uuid4()
    values = fetch_values([(name, [(0, 0, 1 << 20)]), ("gone", [(0, 0, 1 << 20), (1, 0, 1 << 20)])],
                          topic_ids={name: known, "gone": stranger})
    r = client.request(1, version, **values)
    assert r.error_code == NONE
    by_id = {t.topic_id: {p.partition_index: p for p in t.partitions} for t in r.responses}
    assert set(by_id) == {known, stranger}
    assert by_id[known][0].error_code == NONE and bytes(by_id[known][0].records) == as_stored(batch, 0)
    assert {i: p.error_code for i, p in by_id[stranger].items()} == {0: UNKNOWN_TOPIC_ID, 1: UNKNOWN_TOPIC_ID}
    assert not by_id[stranger][0].records



def test_long_poll_does_not_block_other_connections(broker, client):
    """A fetch parked waiting for data holds up its own connection only."""
    name = unique_topic("poll-isolation")
    client.create_topic(name)
    fetch_version = SERVED_VERSIONS[1][1]
    cid = client.send(build_request(1, fetch_version, **_fetch_values(client, fetch_version, name, [(0, 0, 1 << 20)],
                                                                    1000, 1)))
    t0 = time.monotonic()
    with Client.to(broker) as other:
        assert other.request(18, 0).error_code == NONE
        assert other.produced(unique_topic_created(other), 0, make_batch([b"elsewhere"])) == 0
    assert time.monotonic() - t0 < 0.8, "another connection waited for a parked long poll"
    r = client.recv(1, fetch_version, cid, timeout=8.0)
    assert r.responses[0].partitions[0].error_code == NONE and not r.responses[0].partitions[0].records


def unique_topic_created(client: Client) -> str:
    name = unique_topic("elsewhere")
    client.create_topic(name)
    return name
