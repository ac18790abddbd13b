"""Bad input from one peer costs that peer only.

Every test here runs under a `guard`: a connection opened before the bad input and one
opened after it must both still be served, the broker process must be alive, and a
sentinel topic written before any test must read back byte for byte. Protocol breakage
(bad frames, headers, API keys, versions, bodies) closes the offending connection with
no reply; bad record batches are refused per partition with Kafka's error code and
store nothing.
"""

from __future__ import annotations

import random
import struct
import threading
import time
import uuid
import weakref

import pytest

from compat_tests.helpers.raw_kafka import (
    Client, RawKafka, as_stored, build_request, encode_body, encode_header, frame, make_batch, recrc)
from compat_tests.helpers.topics import unique_topic
from wire.protocol import SERVED_VERSIONS

NONE = 0
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
INVALID_RECORD = 87
# Kafka answers a wrong magic, an inconsistent record count or no whole batch in Produce v3+
# with INVALID_RECORD (ProduceRequest.validateRecords, LogValidator); a CRC mismatch with CORRUPT_MESSAGE.

DEFAULT_MAX_REQUEST_BYTES = 100 * 1024 * 1024  # socket.request.max.bytes
CLOSE_WITHIN = 3.0  # seconds a broker may take to drop a connection that broke the protocol

FETCH_MIN, FETCH_MAX = SERVED_VERSIONS[1]
METADATA_MAX = SERVED_VERSIONS[3][1]
# The newest versions that name topics: v13+ of both name them by id (KIP-516), and the cases
# below are about names.
PRODUCE_BY_NAME_MAX = 12
FETCH_BY_NAME_MAX = 12


# --- the guard -----------------------------------------------------------------------------

# Keyed by the broker object itself, weakly: an id() was reused by the next module's broker once
# the first was collected, which then looked for a sentinel topic it never had (a full run, the
# commitlog half of this module: 44 failures, UNKNOWN_TOPIC_OR_PARTITION).
_SENTINELS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _sentinel(broker) -> tuple[str, bytes]:
    """A topic written once per broker process object: (name, the bytes it must keep)."""
    key = broker
    if key not in _SENTINELS:
        name = unique_topic("sentinel")
        with Client.to(broker) as c:
            c.create_topic(name, 1)
            b1 = make_batch([b"first", b"second"], keys=[b"k1", None])
            b2 = make_batch([bytes(range(256))])
            assert c.produce(name, 0, b1).base_offset == 0
            assert c.produce(name, 0, b2).base_offset == 2
            expected = as_stored(b1, 0) + as_stored(b2, 2)
            assert c.stored_bytes(name) == expected
        _SENTINELS[key] = (name, expected)
    return _SENTINELS[key]


class Guard:
    def __init__(self, broker) -> None:
        self.broker = broker
        self.topic, self.expected = _sentinel(broker)
        self.before = Client.to(broker)
        assert self.before.request(18, 0).error_code == NONE
        self.checked = False

    def _served(self, conn: Client, which: str) -> None:
        assert conn.request(18, 0).error_code == NONE, f"{which} connection: ApiVersions failed"
        assert conn.stored_bytes(self.topic) == self.expected, f"{which} connection: sentinel data changed"
        assert conn.log_end_offset(self.topic) == 3, f"{which} connection: sentinel log end moved"

    def check(self) -> None:
        # These requests reach the broker's one event loop after the bad input did, so a crash
        # that input caused fails them; the broker's death, if that is what it was, is reported.
        try:
            try:
                self._served(self.before, "pre-existing")
            except (OSError, ConnectionError) as exc:
                raise AssertionError(f"the connection opened before the bad input was dropped: {exc!r}") from exc
            with Client.to(self.broker) as after:
                self._served(after, "new")
        finally:
            self._assert_alive()
        self.checked = True

    def _assert_alive(self) -> None:
        if not self.broker.is_running():
            said = [line for line in self.broker.log_text().splitlines()
                    if line.strip() and not line.lstrip()[:1].isdigit() and not line.lstrip().startswith("at ")]
            raise AssertionError(f"the broker died (exit code {self.broker.returncode}); its last words:\n"
                                 + "\n".join(said[-8:]))

    def close(self) -> None:
        self.before.close()


@pytest.fixture
def guard(request, broker):
    failed_before = request.session.testsfailed
    g = Guard(broker)
    yield g
    g.close()
    if request.session.testsfailed == failed_before:
        assert g.checked, "the test passed without calling guard.check()"


def assert_closed_without_reply(conn: RawKafka, what: str) -> None:
    t0 = time.monotonic()
    got = conn.drain_until_closed(CLOSE_WITHIN)
    assert got is not None, f"{what}: connection still open after {CLOSE_WITHIN}s"
    assert got == b"", f"{what}: the broker replied {got[:64].hex()} before closing"
    assert time.monotonic() - t0 < CLOSE_WITHIN


def header(api_key: int, version: int, correlation_id: int = 1, client_id: str | None = "bad-input",
           flexible: bool = False) -> bytes:
    return encode_header(api_key, version, correlation_id, client_id, flexible)


def metadata_body(version: int, names: list[str]) -> bytes:
    return encode_body(build_request(3, version, topics=[{"name": n, "topic_id": None} for n in names],
                                     allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                                     include_topic_authorized_operations=False))


def produce_body(version: int, topic: str, records: bytes) -> bytes:
    return encode_body(build_request(0, version, transactional_id=None, acks=-1, timeout=5000, topic_data=[
        {"name": topic, "partition_data": [{"index": 0, "records": records}]}]))


# --- frames --------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [-1, -2, -(2**31)])
def test_negative_frame_size(broker, guard, size):
    with RawKafka.to(broker) as bad:
        bad.send_bytes(struct.pack(">i", size))  # nothing after it: only the size itself can be refused
        assert_closed_without_reply(bad, f"frame size {size}")
    guard.check()


def test_oversized_frame_is_refused_before_its_body(broker, guard):
    claimed = 200 * 1024 * 1024
    with RawKafka.to(broker) as bad:
        bad.send_bytes(struct.pack(">i", claimed) + header(3, METADATA_MAX, flexible=True))
        # Prompt close: the broker judged the 4-byte prefix, it did not wait for 200 MiB.
        assert_closed_without_reply(bad, f"frame of {claimed} bytes")
    guard.check()


def test_frame_size_limit_is_socket_request_max_bytes(broker, guard):
    with RawKafka.to(broker) as bad:
        bad.send_bytes(struct.pack(">i", DEFAULT_MAX_REQUEST_BYTES + 1))
        assert_closed_without_reply(bad, "frame one byte over socket.request.max.bytes")
    with RawKafka.to(broker) as at_limit:
        at_limit.send_bytes(struct.pack(">i", DEFAULT_MAX_REQUEST_BYTES) + b"\x00\x03")
        assert at_limit.no_reply_within(0.3), "a frame of exactly the limit was refused"
    guard.check()


_TRUNCATED_HEADERS = {
    "empty frame": b"",
    "six bytes": struct.pack(">hhh", 3, 1, 0),
    "client_id runs past the end": struct.pack(">hhih", 3, 1, 7, 80) + b"abc",
    "flexible header without tagged fields": struct.pack(">hhih", 3, METADATA_MAX, 7, 3) + b"abc",
    "tagged field runs past the end": struct.pack(">hhih", 3, METADATA_MAX, 7, 3) + b"abc" + b"\x01\x00\x7f" + b"x",
    "unterminated tag varint": struct.pack(">hhih", 3, METADATA_MAX, 7, 3) + b"abc" + b"\xff\xff",
}


@pytest.mark.parametrize("case", list(_TRUNCATED_HEADERS))
def test_truncated_header(broker, guard, case):
    with RawKafka.to(broker) as bad:
        bad.send_bytes(frame(_TRUNCATED_HEADERS[case]))
        assert_closed_without_reply(bad, case)
    guard.check()


# --- API keys and versions -----------------------------------------------------------------

@pytest.mark.parametrize("api_key", [9999, -1, 55, 67])  # Kafka's DescribeQuorum, AllocateProducerIds: not served
def test_unknown_api_key(broker, guard, api_key):
    assert api_key not in SERVED_VERSIONS
    with RawKafka.to(broker) as bad:
        bad.send_bytes(frame(header(api_key, 0) + b"\x00\x00\x00\x00"))
        assert_closed_without_reply(bad, f"api key {api_key}")
    guard.check()


_UNSERVED = [
    (1, FETCH_MIN - 1, FETCH_MIN),   # Fetch v3: below the range (kio has no v3: send the v4 body)
    (1, FETCH_MAX + 1, FETCH_MAX),
    (3, METADATA_MAX + 1, METADATA_MAX),
    (2, SERVED_VERSIONS[2][0] - 1, SERVED_VERSIONS[2][0]),
    (19, SERVED_VERSIONS[19][0] - 1, SERVED_VERSIONS[19][0]),
]


def _body_for(api_key: int, version: int, topic: str) -> bytes:
    from compat_tests.helpers.raw_kafka import fetch_values

    if api_key == 1:
        return encode_body(build_request(1, version, **fetch_values([(topic, [(0, 0, 1 << 20)])],
                                                                    topic_ids={topic: uuid.uuid4()})))
    if api_key == 3:
        return metadata_body(version, [topic])
    if api_key == 2:
        return encode_body(build_request(2, version, replica_id=-1, topics=[
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]))
    return encode_body(build_request(19, version, topics=[], timeout=1000, validate_only=True))


@pytest.mark.parametrize("api_key,version,body_version", _UNSERVED,
                         ids=[f"api{k}-v{v}" for k, v, _ in _UNSERVED])
def test_unsupported_version_closes_connection(broker, guard, api_key, version, body_version):
    from compat_tests.helpers.raw_kafka import is_flexible

    flexible = is_flexible(api_key, body_version)
    with RawKafka.to(broker) as bad:
        bad.send_bytes(frame(header(api_key, version, flexible=flexible) + _body_for(api_key, body_version, guard.topic)))
        assert_closed_without_reply(bad, f"api {api_key} v{version}")
    guard.check()


# --- malformed bodies ----------------------------------------------------------------------

def _garbage_cases(topic: str) -> dict[str, bytes]:
    md = header(3, METADATA_MAX, flexible=True)
    md_legacy = header(3, 1)
    pr = header(0, PRODUCE_BY_NAME_MAX, flexible=True)
    pr3 = header(0, 3)
    valid_md = metadata_body(METADATA_MAX, ["some-topic-name"])
    valid_pr = produce_body(PRODUCE_BY_NAME_MAX, topic, make_batch([b"must not be stored"] * 3))
    valid_pr3 = produce_body(3, topic, make_batch([b"must not be stored either"]))
    return {
        "metadata truncated": md + valid_md[: len(valid_md) // 2],
        "metadata random bytes": md + random.Random(1).randbytes(64),
        "metadata empty body": md,
        "metadata legacy array count 2^31-1": md_legacy + b"\x7f\xff\xff\xff",
        # Compact array counts near 2^32: kio's native reader would preallocate them and the
        # failed allocation aborts the process; wire/request_bounds.py refuses them first.
        "metadata compact array count 2^32-2": md + bytes.fromhex("ffffffff0f"),
        "produce compact topic array count 2^32-2": pr + bytes.fromhex("00ffff00001388ffffffff0f"),
        "produce truncated inside records": pr + valid_pr[: len(valid_pr) - 20],
        "produce random bytes": pr + random.Random(2).randbytes(100),
        "produce v3 records length past end": pr3 + valid_pr3[:-30],
    }


_GARBAGE_NAMES = list(_garbage_cases("t"))


@pytest.mark.parametrize("case", _GARBAGE_NAMES)
def test_garbage_body_closes_connection(broker, guard, client, case):
    topic = unique_topic("garbage-target")
    client.create_topic(topic)
    with RawKafka.to(broker) as bad:
        bad.send_bytes(frame(_garbage_cases(topic)[case]))
        assert_closed_without_reply(bad, case)
    guard.check()
    assert client.log_end_offset(topic) == 0, "a malformed produce stored records"


# --- bad record batches (per-partition refusals; the connection stays open) -------------------

def _refused(client: Client, topic: str, batch: bytes, codes: set[int], what: str) -> None:
    before = client.stored_bytes(topic)
    leo = client.log_end_offset(topic)
    p = client.produce(topic, 0, batch)
    assert p.error_code in codes, f"{what}: error {p.error_code!r}, expected one of {codes}"
    assert p.base_offset == -1
    assert client.log_end_offset(topic) == leo, f"{what}: the log end offset moved"
    assert client.stored_bytes(topic) == before, f"{what}: stored bytes changed"


@pytest.fixture
def batch_topic(client):
    """A topic holding one good batch at offsets 0-2."""
    name = unique_topic("batches")
    client.create_topic(name)
    assert client.produce(name, 0, make_batch([b"good", b"batch", b"here"])).base_offset == 0
    return name


@pytest.mark.parametrize("position", ["crc", "base_timestamp", "attributes_high_byte", "last_record_byte"])
def test_corrupt_batch_crc(guard, client, batch_topic, position):
    batch = bytearray(make_batch([b"x" * 50, b"y" * 50]))
    pos = {"crc": 17, "base_timestamp": 30, "attributes_high_byte": 21, "last_record_byte": len(batch) - 1}[position]
    batch[pos] ^= 0x40
    _refused(client, batch_topic, bytes(batch), {CORRUPT_MESSAGE}, f"flipped byte at {pos}")
    # The same connection goes on: a good batch lands right after the existing data.
    assert client.produce(batch_topic, 0, make_batch([b"ok"])).base_offset == 3
    guard.check()


@pytest.mark.parametrize("magic", [0, 1, 3])
def test_wrong_magic(guard, client, batch_topic, magic):
    batch = bytearray(make_batch([b"a", b"b"]))
    batch[16] = magic  # outside the CRC: only the magic check can catch it
    _refused(client, batch_topic, bytes(batch), {INVALID_RECORD}, f"magic {magic}")
    guard.check()


@pytest.mark.parametrize("field,value", [("record_count", 5), ("record_count", 0), ("last_offset_delta", 0),
                                         ("last_offset_delta", 7)])
def test_record_count_mismatch(guard, client, batch_topic, field, value):
    batch = bytearray(make_batch([b"a", b"b", b"c"]))
    pos = {"record_count": 57, "last_offset_delta": 23}[field]
    struct.pack_into(">i", batch, pos, value)
    _refused(client, batch_topic, recrc(bytes(batch)), {INVALID_RECORD}, f"{field}={value} with a valid CRC")
    guard.check()


def test_batch_cut_short(guard, client, batch_topic):
    # Kafka finds no whole batch in the records and refuses them (INVALID_RECORD).
    _refused(client, batch_topic, make_batch([b"a", b"b"])[:-5], {INVALID_RECORD}, "batch cut short")
    _refused(client, batch_topic, make_batch([b"a"])[:40], {INVALID_RECORD}, "batch cut inside its header")
    guard.check()


def test_oversize_batch_vs_max_message_bytes(guard, client):
    name = unique_topic("max-message")
    client.create_topic(name, 1, {"max.message.bytes": "1000"})
    big = make_batch([b"z" * 1500])
    assert len(big) > 1000
    _refused(client, name, big, {MESSAGE_TOO_LARGE}, "1.5 KB batch into max.message.bytes=1000")
    small = make_batch([b"s" * 800])
    assert len(small) <= 1000
    p = client.produce(name, 0, small)
    assert (p.error_code, p.base_offset) == (NONE, 0)
    assert client.stored_bytes(name) == as_stored(small, 0)
    guard.check()


# --- unknown topics and partitions ---------------------------------------------------------------

def test_produce_to_unknown_topic_or_partition(guard, client):
    missing = unique_topic("produce-missing")
    p = client.produce(missing, 0, make_batch([b"nowhere"]))
    assert (p.error_code, p.base_offset) == (UNKNOWN_TOPIC_OR_PARTITION, -1)
    (t,) = client.metadata([missing]).topics
    assert t.error_code == UNKNOWN_TOPIC_OR_PARTITION, "Produce auto-created the topic"

    name = unique_topic("produce-partitions")
    client.create_topic(name, 1)
    good = make_batch([b"kept"])
    r = client.request(0, PRODUCE_BY_NAME_MAX, transactional_id=None, acks=-1, timeout=5000, topic_data=[
        {"name": name, "partition_data": [
            {"index": 1, "records": make_batch([b"p1"])},
            {"index": 0, "records": good},
            {"index": -1, "records": make_batch([b"p-1"])}]}])
    (t,) = r.responses
    got = {p.index: (p.error_code, p.base_offset) for p in t.partition_responses}
    assert got == {1: (UNKNOWN_TOPIC_OR_PARTITION, -1), 0: (NONE, 0), -1: (UNKNOWN_TOPIC_OR_PARTITION, -1)}
    assert client.stored_bytes(name) == as_stored(good, 0)
    (t,) = client.metadata([name]).topics
    assert len(t.partitions) == 1
    guard.check()


def test_fetch_unknown_topic_or_partition(guard, client):
    from compat_tests.helpers.raw_kafka import fetch_values

    name, missing = unique_topic("fetch-partitions"), unique_topic("fetch-missing")
    client.create_topic(name, 1)
    batch = make_batch([b"present"])
    client.produce(name, 0, batch)
    r = client.request(1, FETCH_BY_NAME_MAX, **fetch_values(
        [(name, [(0, 0, 1 << 20), (3, 0, 1 << 20)]), (missing, [(0, 0, 1 << 20)])]))
    got = {(t.topic, p.partition_index): p for t in r.responses for p in t.partitions}
    assert set(got) == {(name, 0), (name, 3), (missing, 0)}
    assert got[(name, 0)].error_code == NONE and bytes(got[(name, 0)].records) == as_stored(batch, 0)
    for key in ((name, 3), (missing, 0)):
        assert got[key].error_code == UNKNOWN_TOPIC_OR_PARTITION, key
        assert not got[key].records and got[key].high_watermark == -1
    guard.check()


# --- idempotent producers ------------------------------------------------------------------

def test_idempotent_producer_sequences_and_epochs(guard, client):
    name = unique_topic("idempotent")
    client.create_topic(name)
    r = client.request(22, SERVED_VERSIONS[22][1], transactional_id=None, transaction_timeout=60_000,
                       producer_id=-1, producer_epoch=-1)
    assert r.error_code == NONE
    pid = r.producer_id

    plain = make_batch([b"p0", b"p1"])
    a = make_batch([b"a0", b"a1", b"a2"], producer_id=pid, producer_epoch=0, base_sequence=0)
    b = make_batch([b"b0", b"b1"], producer_id=pid, producer_epoch=0, base_sequence=3)
    gap = make_batch([b"gap"], producer_id=pid, producer_epoch=0, base_sequence=10)
    bumped = make_batch([b"e1"], producer_id=pid, producer_epoch=1, base_sequence=0)
    stale = make_batch([b"old"], producer_id=pid, producer_epoch=0, base_sequence=5)

    def send(batch):
        p = client.produce(name, 0, batch)
        return int(p.error_code), p.base_offset

    assert send(plain) == (NONE, 0)
    assert send(a) == (NONE, 2)
    assert send(a) == (NONE, 2), "a resent batch must get its original offset"
    assert client.log_end_offset(name) == 5, "a resent batch was appended again"
    assert send(b) == (NONE, 5)
    assert send(a) == (NONE, 2), "an older in-flight batch resent must get its original offset"
    assert client.log_end_offset(name) == 7

    code, _ = send(gap)
    assert code == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert client.log_end_offset(name) == 7

    assert send(bumped) == (NONE, 7)
    code, _ = send(stale)
    assert code == INVALID_PRODUCER_EPOCH
    assert client.log_end_offset(name) == 8
    assert client.stored_bytes(name) == (as_stored(plain, 0) + as_stored(a, 2) + as_stored(b, 5)
                                         + as_stored(bumped, 7))
    guard.check()


# --- many connections, one of them hostile -----------------------------------------------------

def test_concurrent_connections_survive_a_garbage_sender(broker, guard, client):
    workers, batches_per_worker = 6, 15
    name = unique_topic("concurrent")
    client.create_topic(name, workers)
    garbage = list(_garbage_cases(name).items())
    errors: list[str] = []
    results: dict[int, tuple[list[int], bytes, bytes]] = {}
    start = threading.Barrier(workers + 1)

    def work(part: int) -> None:
        try:
            with Client.to(broker) as c:
                sent = [make_batch([f"w{part}-b{i}-r{j}".encode() * 10 for j in range(2)]) for i in range(batches_per_worker)]
                start.wait(10)
                offsets = []
                for b in sent:
                    p = c.produce(name, part, b)
                    assert p.error_code == NONE, p
                    offsets.append(p.base_offset)
                    time.sleep(0.002)  # pacing: good produces spread over the hostile peer's run
                expected = b"".join(as_stored(b, 2 * i) for i, b in enumerate(sent))
                results[part] = (offsets, expected, c.stored_bytes(name, part))
        except Exception as exc:  # reported below, with the partition
            errors.append(f"worker {part}: {exc!r}")

    def hostile() -> None:
        try:
            start.wait(10)
            for i in range(2 * len(garbage)):
                case, data = garbage[i % len(garbage)]
                with RawKafka.to(broker) as bad:
                    if i % 3 == 0:  # a frame split across writes
                        payload = frame(data)
                        bad.send_bytes(payload[:3])
                        time.sleep(0.005)  # the gap between the writes that splits the frame
                        bad.send_bytes(payload[3:])
                    else:
                        bad.send_bytes(frame(data))
                    if bad.drain_until_closed(CLOSE_WITHIN) != b"":
                        errors.append(f"garbage {case!r}: not closed without reply")
        except Exception as exc:
            errors.append(f"garbage sender: {exc!r}")

    # A peer that sends half a frame and then nothing holds only its own connection.
    stalled = RawKafka.to(broker)
    stalled.send_bytes(struct.pack(">i", 500) + b"\x00\x03\x00")
    threads = [threading.Thread(target=work, args=(p,)) for p in range(workers)]
    threads.append(threading.Thread(target=hostile))
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    stalled.close()
    assert not errors, errors
    assert sorted(results) == list(range(workers))
    for part, (offsets, expected, got) in sorted(results.items()):
        assert offsets == [2 * i for i in range(batches_per_worker)], f"partition {part}: offsets {offsets}"
        assert got == expected, f"partition {part}: stored bytes differ from what was produced"
    guard.check()
