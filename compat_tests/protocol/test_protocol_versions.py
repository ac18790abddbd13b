"""Every (api_key, version) we advertise, exercised with a real request over a raw socket.

The version lists come from wire.protocol.SERVED_VERSIONS, the table ApiVersions
advertises (see served_versions.py): a version added there is run through these tests
automatically, and test_served_versions_coverage.py fails for an API key nobody tested.
Fetch is in test_fetch_protocol_versions.py, topic and cluster APIs in
test_topic_protocol_versions.py, consumer-group APIs in
test_group_protocol_versions.py, DeleteRecords in test_admin_protocol_versions.py.

Each test checks what the response says, not only that it parses: offsets assigned,
bytes read back, error codes for the cases Kafka defines, and state seen through a
second API afterwards. Requests are built by compat_tests/helpers/raw_kafka.py with kio, so
the bytes on the wire are those of the version under test.
"""

from __future__ import annotations

import datetime
import time
import uuid

import pytest

from compat_tests.helpers.raw_kafka import (
    PRODUCE_BY_TOPIC_ID, as_stored, build_request, decode_api_versions_v0, decode_legacy_produce_response, encode_body,
    encode_header, encode_legacy_produce, frame, make_batch)
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic
from wire.protocol import SERVED_VERSIONS

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
UNSUPPORTED_VERSION = 35
UNKNOWN_TOPIC_ID = 100

ZERO_UUID = uuid.UUID(int=0)
NO_THROTTLE = datetime.timedelta(0)


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
    if version >= 3:  # KIP-584 features: transaction.version, finalized at the default level 2 (KIP-890),
        # group.version 1 (KIP-848), share.version 1 (KIP-932), streams.version 1 (KIP-1071), as a new
        # Kafka 4.3 cluster
        assert [(f.name, f.max_version_level, f.min_version_level) for f in r.finalized_features] == [
            ("group.version", 1, 1), ("share.version", 1, 1), ("streams.version", 1, 1),
            ("transaction.version", 2, 2)]
        assert r.finalized_features_epoch > 0
        supported = [(f.name, f.min_version, f.max_version) for f in r.supported_features]
        assert supported == ([("group.version", 0, 1), ("share.version", 0, 1), ("streams.version", 0, 1),
                              ("transaction.version", 0, 2)]
                             if version >= 4 else [])  # v3: no range from 0
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
    assert client.produced(name, 0, make_batch([b"x"])) == 0
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
    client.produced(name, 0, make_batch([b"0", b"1", b"2"], timestamps=[b, b + 1, b + 2]))
    client.produced(name, 0, make_batch([b"3", b"4", b"5"], timestamps=[b + 1000, b + 3000, b + 2000]))
    client.produced(name, 0, make_batch([b"6"], timestamps=[b + 500]))

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
def test_list_offsets_tiered_positions_find_nothing_without_tiered_storage(client, version):
    """KIP-1005's latest tiered offset (-5) and, from v11, KIP-1023's earliest pending upload
    (-6): nothing is tiered or waits to be here, so no offset and no leader epoch, as Kafka's
    UnifiedLog answers with remote storage off."""
    name = unique_topic("list-tiered")
    client.create_topic(name)
    client.produced(name, 0, make_batch([b"local only"]))
    positions = [-5] + ([-6] if version >= 11 else [])
    got = _list_offsets(client, version, name, [(0, ts) for ts in positions])
    assert got == [(NONE, -1, -1, -1)] * len(positions)


# The first version that may ask for each position (Kafka's timestampMinSupportedVersion).
POSITION_VERSIONS = {-1: 1, -2: 1, -3: 7, -4: 8, -5: 9, -6: 11}


@over_versions(2)
def test_list_offsets_positions_newer_than_the_version_are_unsupported(client, version):
    """A position asked for below the version that brought it, or a negative timestamp that is
    no position (-7), answers UNSUPPORTED_VERSION on its partition, as Kafka's ReplicaManager;
    the other partitions of the request are answered."""
    name = unique_topic("list-positions")
    client.create_topic(name)
    client.produced(name, 0, make_batch([b"x"]))
    asked = [-1, -2, -3, -4, -5, -6, -7]
    got = _list_offsets(client, version, name, [(0, ts) for ts in asked])
    def expected(ts: int) -> int:
        first = POSITION_VERSIONS.get(ts)
        return NONE if first is not None and version >= first else UNSUPPORTED_VERSION

    assert {ts: code for ts, (code, *_) in zip(asked, got)} == {ts: expected(ts) for ts in asked}
    assert got[0][1] == 1  # latest, answered beside the refused ones


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
