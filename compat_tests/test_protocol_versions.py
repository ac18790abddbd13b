"""Every (api_key, version) we advertise, exercised with a real request over a raw socket.

The version lists come from wire.protocol.SERVED_VERSIONS, the table ApiVersions
advertises (see served_versions.py): a version added there is run through these tests
automatically, and test_served_versions_coverage.py fails for an API key nobody tested.
Topic and cluster APIs are in test_topic_protocol_versions.py, consumer-group APIs in
test_group_protocol_versions.py, DeleteRecords in test_admin_protocol_versions.py.

Each test checks what the response says, not only that it parses: offsets assigned,
bytes read back, error codes for the cases Kafka defines, and state seen through a
second API afterwards. Requests are built by compat_tests/raw_kafka.py with kio, so
the bytes on the wire are those of the version under test.
"""

from __future__ import annotations

import datetime
import time
import uuid

import pytest

from compat_tests.raw_kafka import (
    PRODUCE_BY_TOPIC_ID,
    Client,
    as_stored,
    build_request,
    decode_api_versions_v0,
    decode_legacy_produce_response,
    encode_body,
    encode_header,
    encode_legacy_produce,
    fetch_values,
    frame,
    make_batch,
    read_records,
    split_batches,
)
from compat_tests.served_versions import over_versions
from compat_tests.topics import unique_topic
from wire.protocol import SERVED_VERSIONS

NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
UNSUPPORTED_VERSION = 35
UNKNOWN_TOPIC_ID = 100

FETCH_BY_TOPIC_ID = 13  # KIP-516: Fetch v13+ names topics by id

ZERO_UUID = uuid.UUID(int=0)
NO_THROTTLE = datetime.timedelta(0)

# --- fixtures and small helpers ----------------------------------------------------------


def produced(client: Client, topic: str, partition: int, batch: bytes) -> int:
    p = client.produce(topic, partition, batch)
    assert p.error_code == NONE, p
    return p.base_offset


# --- ApiVersions ---------------------------------------------------------------------------

@over_versions(18)
def test_api_versions(client, version):
    r = client.request(18, version, client_software_name="twinlog-compat", client_software_version="1.0")
    assert r.error_code == NONE
    table = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert len(table) == len(r.api_keys), f"duplicate keys in {r.api_keys}"
    assert table == SERVED_VERSIONS
    if version >= 1:
        assert r.throttle_time == NO_THROTTLE
    if version >= 3:  # KIP-584 features: transaction.version, finalized at the default level 2 (KIP-890)
        assert [(f.name, f.max_version_level, f.min_version_level) for f in r.finalized_features] == [
            ("transaction.version", 2, 2)]
        assert r.finalized_features_epoch > 0
        supported = [(f.name, f.min_version, f.max_version) for f in r.supported_features]
        assert supported == ([("transaction.version", 0, 2)] if version >= 4 else [])  # v3: no range from 0
    # The connection stays usable for the client's next request.
    assert client.request(18, 0).error_code == NONE


@pytest.mark.parametrize("above", [1, 50])
def test_api_versions_above_max_gets_v0_unsupported_reply(client, above):
    hi = SERVED_VERSIONS[18][1]
    body = encode_body(build_request(18, hi, client_software_name="twinlog-compat",
                                     client_software_version="1.0"))
    client.send_bytes(frame(encode_header(18, hi + above, 4242, "probe", flexible=True) + body))
    cid, error_code, table = decode_api_versions_v0(client.recv_payload())
    assert cid == 4242
    assert error_code == UNSUPPORTED_VERSION
    assert {k: (lo, hi_) for k, lo, hi_ in table} == SERVED_VERSIONS
    # The client retries with a version we listed, on the same connection.
    assert client.request(18, hi, client_software_name="x", client_software_version="1").error_code == NONE


# --- Metadata -----------------------------------------------------------------------------

def _metadata(client, version, names, auto):
    topics = None if names is None else [{"name": n, "topic_id": None} for n in names]
    return client.request(3, version, topics=topics, allow_auto_topic_creation=auto,
                          include_cluster_authorized_operations=False, include_topic_authorized_operations=False)


@over_versions(3)
def test_metadata(client, broker, version):
    name = unique_topic("md")
    r = _metadata(client, version, [name], True)
    (b,) = r.brokers
    assert (b.host, b.port) == (broker.host, broker.port)
    node = b.node_id
    (t,) = r.topics
    assert t.name == name
    assert t.error_code in (NONE, LEADER_NOT_AVAILABLE)  # Kafka may answer the creating request with 5
    if t.error_code:
        (t,) = _metadata(client, version, [name], True).topics
    assert t.error_code == NONE
    assert len(t.partitions) >= 1
    assert sorted(p.partition_index for p in t.partitions) == list(range(len(t.partitions)))
    for p in t.partitions:
        assert p.error_code == NONE
        assert p.leader_id == node
        assert tuple(p.replica_nodes) == (node,) and tuple(p.isr_nodes) == (node,)
        if version >= 7:
            assert p.leader_epoch >= 0
    if version >= 1:
        assert r.controller_id == node
        assert t.is_internal is False
    if version >= 2:
        assert isinstance(r.cluster_id, str) and r.cluster_id
    if version >= 13:  # KIP-1102's top-level error (REBOOTSTRAP_REQUIRED), none here
        assert r.error_code == NONE
    if version >= 10:
        assert t.topic_id is not None and t.topic_id != ZERO_UUID
        (again,) = _metadata(client, version, [name], False).topics
        assert again.topic_id == t.topic_id
        other = unique_topic("md-other")
        (o,) = _metadata(client, version, [other], True).topics
        if o.error_code == NONE:
            assert o.topic_id not in (None, ZERO_UUID, t.topic_id)
    # The auto-created topic is real: it takes a batch at offset 0.
    assert produced(client, name, 0, make_batch([b"x"])) == 0
    # An all-topics request lists it (v0 asks for all with an empty list, v1+ with null).
    everything = _metadata(client, version, [] if version == 0 else None, False)
    assert name in {x.name for x in everything.topics}


@over_versions(3, lo=4)
def test_metadata_without_auto_creation(client, version):
    name = unique_topic("md-noauto")
    (t,) = _metadata(client, version, [name], False).topics
    assert (t.name, t.error_code) == (name, UNKNOWN_TOPIC_OR_PARTITION)
    assert t.partitions == ()
    (t,) = client.metadata([name]).topics
    assert t.error_code == UNKNOWN_TOPIC_OR_PARTITION, "asking without auto-creation created the topic"


# --- Produce -------------------------------------------------------------------------------

@over_versions(0, lo=3)
def test_produce(client, version):
    name = unique_topic("produce")
    topic_id = client.create_topic(name, 2)
    b1, b2 = make_batch([b"a", b"b", b"c"]), make_batch([b"d", b"e"])
    for batch, want in ((b1, 0), (b2, 3)):
        p = client.produce(name, 0, batch, version=version)
        assert p.error_code == NONE, p
        assert p.base_offset == want
        assert p.log_append_time is None  # -1: CreateTime topic
        if version >= 5:
            assert p.log_start_offset == 0
        if version >= 8:
            assert p.record_errors == () and p.error_message is None

    # Two partitions in one request: each numbered on its own.
    b3, b4 = make_batch([b"f"]), make_batch([b"g", b"h"])
    r = client.request(0, version, transactional_id=None, acks=-1, timeout=10_000, topic_data=[
        {"name": name, "topic_id": topic_id,
         "partition_data": [{"index": 0, "records": b3}, {"index": 1, "records": b4}]}])
    assert r.throttle_time == NO_THROTTLE
    (t,) = r.responses
    assert t.topic_id == topic_id if version >= PRODUCE_BY_TOPIC_ID else t.name == name
    got = {p.index: (p.error_code, p.base_offset) for p in t.partition_responses}
    assert got == {0: (NONE, 5), 1: (NONE, 0)}

    # acks=0: appended, never answered; the next reply on the connection is the next request's.
    b5, b6 = make_batch([b"i", b"j", b"k"]), make_batch([b"l"])
    client.send(build_request(0, version, transactional_id=None, acks=0, timeout=10_000, topic_data=[
        {"name": name, "topic_id": topic_id, "partition_data": [{"index": 1, "records": b5}]}]))
    p = client.produce(name, 1, b6, version=version, acks=1)
    assert (p.error_code, p.base_offset) == (NONE, 5)

    assert client.stored_bytes(name, 0) == as_stored(b1, 0) + as_stored(b2, 3) + as_stored(b3, 5)
    assert client.stored_bytes(name, 1) == as_stored(b4, 0) + as_stored(b5, 2) + as_stored(b6, 5)
    assert client.log_end_offset(name, 0) == 6 and client.log_end_offset(name, 1) == 6


@over_versions(0, lo=PRODUCE_BY_TOPIC_ID)
def test_produce_by_topic_id(client, version):
    """KIP-516: an id no topic here has is UNKNOWN_TOPIC_ID for each of its partitions, and
    nothing of it is stored; the known topic beside it is appended."""
    name = unique_topic("produce-id")
    known = client.create_topic(name)
    stranger = uuid.uuid4()
    batch = make_batch([b"by id"])
    r = client.request(0, version, transactional_id=None, acks=-1, timeout=10_000, topic_data=[
        {"topic_id": stranger, "partition_data": [{"index": 0, "records": batch}, {"index": 1, "records": batch}]},
        {"topic_id": known, "partition_data": [{"index": 0, "records": batch}]}])
    got = {t.topic_id: {p.index: (p.error_code, p.base_offset) for p in t.partition_responses} for t in r.responses}
    assert got == {stranger: {0: (UNKNOWN_TOPIC_ID, -1), 1: (UNKNOWN_TOPIC_ID, -1)}, known: {0: (NONE, 0)}}
    assert client.stored_bytes(name) == as_stored(batch, 0)


@over_versions(0, hi=2)
def test_produce_legacy_versions_answer_unsupported(client, version):
    name = unique_topic("produce-legacy")
    client.create_topic(name, 2)
    batch = make_batch([b"legacy"])
    client.send_bytes(encode_legacy_produce(version, 77, acks=1, timeout_ms=5000,
                                            topic_data=[(name, [(0, batch), (1, batch)])]))
    cid, topics, throttle = decode_legacy_produce_response(version, client.recv_payload())
    assert cid == 77
    append_time = -1 if version >= 2 else None
    assert topics == [(name, [(0, UNSUPPORTED_VERSION, -1, append_time), (1, UNSUPPORTED_VERSION, -1, append_time)])]
    assert throttle == (0 if version >= 1 else None)

    # acks=0 gets no reply at all, and the connection carries on.
    client.send_bytes(encode_legacy_produce(version, 78, acks=0, timeout_ms=5000, topic_data=[(name, [(0, batch)])]))
    r = client.request(18, 0)  # raises if the next reply is not this request's
    assert r.error_code == NONE
    assert client.log_end_offset(name, 0) == 0 and client.log_end_offset(name, 1) == 0


# --- Fetch ---------------------------------------------------------------------------------

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
    assert produced(client, name, 0, b1) == 0
    assert produced(client, name, 0, b2) == 3
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
    produced(client, name, 0, b1)
    assert produced(client, name, 0, b2) == 2
    p = _fetch(client, version, name, [(0, 4, 1 << 20)])[0]
    assert p.error_code == NONE
    complete, partial = split_batches(p.records)
    assert complete == [as_stored(b2, 2)] and partial == b""
    assert [r[0] for r in read_records(p.records)] == [2, 3, 4, 5, 6]


@over_versions(1)
def test_fetch_offset_out_of_range(client, version):
    name = unique_topic("fetch-oor")
    client.create_topic(name)
    produced(client, name, 0, make_batch([b"a", b"b", b"c"]))
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
    produced(client, name, 0, first)

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
        assert produced(producer, name, 0, second) == 1
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
            assert produced(client, name, part, b) == i
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
    produced(client, name, 0, batch)
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


# --- ListOffsets ---------------------------------------------------------------------------

def _list_offsets(client, version, topic, queries):
    """queries: [(partition, timestamp)] -> [(error, offset, timestamp, leader_epoch or None)]."""
    parts = [{"partition_index": p, "timestamp": ts, "current_leader_epoch": -1} for p, ts in queries]
    r = client.request(2, version, replica_id=-1, isolation_level=0, timeout=10_000,
                       topics=[{"name": topic, "partitions": parts}])
    out = []
    for t in r.topics:
        assert t.name == topic
        for p in t.partitions:
            out.append((p.error_code, p.offset, p.timestamp, getattr(p, "leader_epoch", None)))
    assert len(out) == len(queries)
    return out


@over_versions(2)
def test_list_offsets(client, version):
    name = unique_topic("list-offsets")
    client.create_topic(name)
    b = int(time.time() * 1000) - 3_600_000
    produced(client, name, 0, make_batch([b"0", b"1", b"2"], timestamps=[b, b + 1, b + 2]))
    produced(client, name, 0, make_batch([b"3", b"4", b"5"], timestamps=[b + 1000, b + 3000, b + 2000]))
    produced(client, name, 0, make_batch([b"6"], timestamps=[b + 500]))

    queries = [(0, -2), (0, -1), (0, b + 1), (0, b + 1000), (0, b + 2500), (0, b + 200), (0, b + 3001), (0, b)]
    expected = [(0, None), (7, None), (1, b + 1), (3, b + 1000), (4, b + 3000), (3, b + 1000), (-1, -1), (0, b)]
    if version >= 7:
        queries.append((0, -3))
        expected.append((4, b + 3000))  # the record with the largest timestamp, mid-batch
    if version >= 8:  # earliest local (KIP-405): with no tiered storage, the log start
        queries.append((0, -4))
        expected.append((0, None))
    got = _list_offsets(client, version, name, queries)
    for (code, offset, ts, leader_epoch), (want_offset, want_ts), (_, query) in zip(got, expected, queries):
        assert code == NONE, (query, code)
        assert offset == want_offset, f"timestamp query {query}: offset {offset}, expected {want_offset}"
        if want_ts is not None:
            assert ts == want_ts, f"timestamp query {query}: timestamp {ts}, expected {want_ts}"
        else:
            assert ts == -1
        if version >= 4 and offset >= 0 and query >= 0:
            assert leader_epoch == 0
    ((code, *_),) = _list_offsets(client, version, name, [(7, -1)])
    assert code == UNKNOWN_TOPIC_OR_PARTITION

    # Records deleted below 2: the earliest and (v8+) the earliest local offset move with the log start.
    r = client.request(21, 2, timeout=10_000, topics=[{"name": name, "partitions": [{"partition_index": 0, "offset": 2}]}])
    assert r.topics[0].partitions[0].error_code == NONE
    starts = _list_offsets(client, version, name, [(0, -2)] + ([(0, -4)] if version >= 8 else []))
    assert [(code, offset) for code, offset, _, _ in starts] == [(NONE, 2)] * len(starts)


@over_versions(2, lo=9)
def test_list_offsets_latest_tiered_finds_nothing_without_tiered_storage(client, version):
    """KIP-1005's latest tiered offset (-5): nothing is tiered here, so no offset, as Kafka with
    remote storage off."""
    name = unique_topic("list-tiered")
    client.create_topic(name)
    produced(client, name, 0, make_batch([b"local only"]))
    ((code, offset, ts, _),) = _list_offsets(client, version, name, [(0, -5)])
    assert (code, offset, ts) == (NONE, -1, -1)


# --- pipelining (all versions share the ordering rule) --------------------------------------

def test_pipelined_requests_are_answered_in_order(client):
    """Several requests of different APIs and versions sent back to back: replies in order."""
    name = unique_topic("pipeline")
    client.create_topic(name)
    sent = []
    for api_key, version in [(18, 0), (3, 12), (18, 3), (3, 1), (2, 7)]:
        if api_key == 18:
            req = build_request(18, version, client_software_name="x", client_software_version="1")
        elif api_key == 3:
            req = build_request(3, version, topics=[{"name": name, "topic_id": None}],
                                allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                                include_topic_authorized_operations=False)
        else:
            req = build_request(2, version, replica_id=-1, isolation_level=0, topics=[
                {"name": name, "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}])
        sent.append((api_key, version, client.send(req)))
    for api_key, version, cid in sent:
        client.recv(api_key, version, cid)


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
        assert produced(other, unique_topic_created(other), 0, make_batch([b"elsewhere"])) == 0
    assert time.monotonic() - t0 < 0.8, "another connection waited for a parked long poll"
    r = client.recv(1, fetch_version, cid, timeout=8.0)
    assert r.responses[0].partitions[0].error_code == NONE and not r.responses[0].partitions[0].records


def unique_topic_created(client: Client) -> str:
    name = unique_topic("elsewhere")
    client.create_topic(name)
    return name
