"""A tiny raw-socket Kafka client for protocol conformance tests.

It encodes any kio request entity with the request header its version needs
and decodes the reply with kio, checking every byte of the reply is consumed,
so a test sees exactly what the broker put on the wire:

    request header v1 (non-flexible versions):
        size i32 | api_key i16 | api_version i16 | correlation_id i32 | client_id nullable string(i16) | body
    request header v2 (flexible versions):
        header v1 + tagged fields (uvarint 0: none)
    response header v0: size i32 | correlation_id i32 | body
    response header v1: size i32 | correlation_id i32 | tagged fields | body
    ApiVersions responses always use response header v0, even when flexible (KIP-511).

Produce v0-v2 are not in kio (Kafka 4 dropped them); `encode_legacy_produce` and
`decode_legacy_produce_response` hand-code them. `decode_api_versions_v0` reads the
v0-layout reply a broker sends to an ApiVersions version it does not serve.

Nothing here imports the broker: the tests check it from the outside.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import socket
import struct
import time
from functools import cache

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import EntityField, EntityTupleField, classify_field, get_schema_field_type

API_VERSIONS = 18
PRODUCE = 0
PRODUCE_BY_TOPIC_ID = 13  # KIP-516: Produce v13 names topics by id

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class ProtocolViolation(AssertionError):
    """The broker's reply does not parse as the response it must be."""


@cache
def request_class(api_key: int, version: int):
    return load_request_schema(api_key, version)


@cache
def response_class(api_key: int, version: int):
    return load_response_schema(api_key, version)


def is_flexible(api_key: int, version: int) -> bool:
    if api_key == PRODUCE and version < 3:
        return False
    return bool(request_class(api_key, version).__flexible__)


def request_header_version(api_key: int, version: int) -> int:
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    if api_key == API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, version) else 0


# --- building entities ---------------------------------------------------------------

def _convert(field: dataclasses.Field, value):
    """Turn test-friendly values (dicts, lists, int milliseconds) into what kio's writers take."""
    if value is None:
        return None
    kind = classify_field(field)
    if isinstance(kind, EntityTupleField):
        return tuple(v if dataclasses.is_dataclass(v) else build(kind.type_, **v) for v in value)
    if isinstance(kind, EntityField):
        return value if dataclasses.is_dataclass(value) else build(kind.type_, **value)
    if kind.is_array:
        return tuple(value)
    ktype = get_schema_field_type(field)
    if ktype.startswith("timedelta") and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    return value


def build(cls, **values):
    """An instance of kio entity `cls` from the values its version declares.

    Values for fields this version lacks are dropped, so one description of a
    request serves every version; nested entities may be given as dicts.
    """
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in values:
            kwargs[f.name] = _convert(f, values[f.name])
    return cls(**kwargs)


def build_request(api_key: int, version: int, **values):
    return build(request_class(api_key, version), **values)


# --- encoding ------------------------------------------------------------------------

def _nullable_string(s: str | None) -> bytes:
    if s is None:
        return _I16.pack(-1)
    raw = s.encode()
    return _I16.pack(len(raw)) + raw


def encode_header(api_key: int, version: int, correlation_id: int, client_id: str | None,
                  flexible: bool | None = None) -> bytes:
    if flexible is None:
        flexible = is_flexible(api_key, version)
    out = struct.pack(">hhi", api_key, version, correlation_id) + _nullable_string(client_id)
    return out + b"\x00" if flexible else out


def encode_body(entity) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def frame(payload: bytes) -> bytes:
    return _I32.pack(len(payload)) + payload


def encode_request(request, correlation_id: int, client_id: str | None = "twinlog-raw",
                   version: int | None = None) -> bytes:
    """A whole frame: size, header v1/v2 by the version's flexibility, kio-encoded body.

    `version` overrides the header's api_version (to send one version's body under
    another version number); by default it is the entity's own.
    """
    api_key = int(request.__api_key__)
    v = int(request.__version__) if version is None else version
    header = encode_header(api_key, v, correlation_id, client_id, bool(request.__flexible__))
    return frame(header + encode_body(request))


def encode_legacy_produce(version: int, correlation_id: int, acks: int, timeout_ms: int,
                          topic_data: list[tuple[str, list[tuple[int, bytes | None]]]],
                          client_id: str | None = "twinlog-raw") -> bytes:
    """Produce v0-v2 (header v1): acks i16 | timeout i32 | [topic, [partition i32, records bytes]]."""
    assert 0 <= version <= 2
    body = bytearray(_I16.pack(acks) + _I32.pack(timeout_ms) + _I32.pack(len(topic_data)))
    for name, parts in topic_data:
        body += _nullable_string(name) + _I32.pack(len(parts))
        for index, records in parts:
            body += _I32.pack(index)
            body += _I32.pack(-1) if records is None else _I32.pack(len(records)) + records
    return frame(encode_header(PRODUCE, version, correlation_id, client_id, False) + bytes(body))


# --- decoding ------------------------------------------------------------------------

def decode_response(api_key: int, version: int, payload: bytes):
    """(correlation_id, kio response entity); raises ProtocolViolation unless it parses exactly."""
    if len(payload) < 4:
        raise ProtocolViolation(f"response of {len(payload)} bytes has no correlation id")
    (correlation_id,) = _I32.unpack_from(payload, 0)
    pos = 4
    if response_header_version(api_key, version) == 1:
        if pos >= len(payload) or payload[pos] & 0x80:
            raise ProtocolViolation("response header v1 without a (small) tagged field count")
        if payload[pos] != 0:
            raise ProtocolViolation(f"response header v1 carries {payload[pos]} unexpected tagged fields")
        pos += 1
    cls = response_class(api_key, version)
    try:
        body, size = entity_reader(cls)(payload, pos)
    except Exception as exc:
        raise ProtocolViolation(
            f"{cls.__name__} v{version} does not parse: {type(exc).__name__}: {exc}; "
            f"payload={payload[:200].hex()}") from exc
    if pos + size != len(payload):
        raise ProtocolViolation(
            f"{cls.__name__} v{version}: {len(payload) - pos - size} trailing bytes after the body")
    return correlation_id, body


def decode_api_versions_v0(payload: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """The v0 layout: correlation_id | error_code i16 | [api_key, min, max] (i32 count); exact."""
    try:
        correlation_id, error_code, count = struct.unpack_from(">ihi", payload, 0)
        table = [struct.unpack_from(">hhh", payload, 10 + 6 * i) for i in range(count)]
    except struct.error as exc:
        raise ProtocolViolation(f"ApiVersions v0 reply does not parse: {exc}; {payload.hex()}") from exc
    if 10 + 6 * count != len(payload):
        raise ProtocolViolation(f"ApiVersions v0 reply: {len(payload) - 10 - 6 * count} trailing bytes")
    return correlation_id, error_code, table


def decode_legacy_produce_response(version: int, payload: bytes):
    """Produce v0-v2 reply: (correlation_id, [(topic, [(partition, error, base_offset, log_append_time)])],
    throttle_ms or None). log_append_time is None for v0-v1. Must parse exactly."""
    pos = 0

    def take(st: struct.Struct):
        nonlocal pos
        (v,) = st.unpack_from(payload, pos)
        pos += st.size
        return v

    try:
        correlation_id = take(_I32)
        topics = []
        for _ in range(take(_I32)):
            n = take(_I16)
            name = payload[pos:pos + n].decode()
            pos += n
            parts = []
            for _ in range(take(_I32)):
                index, code, base = take(_I32), take(_I16), take(_I64)
                append_time = take(_I64) if version >= 2 else None
                parts.append((index, code, base, append_time))
            topics.append((name, parts))
        throttle = take(_I32) if version >= 1 else None
    except struct.error as exc:
        raise ProtocolViolation(f"Produce v{version} reply does not parse: {exc}; {payload.hex()}") from exc
    if pos != len(payload):
        raise ProtocolViolation(f"Produce v{version} reply: {len(payload) - pos} trailing bytes")
    return correlation_id, topics, throttle


# --- the connection ------------------------------------------------------------------

class RawKafka:
    """One TCP connection; requests are answered in order, matched by correlation id."""

    def __init__(self, host: str, port: int, client_id: str | None = "twinlog-raw",
                 timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self.timeout = timeout
        self._next_id = 1

    @classmethod
    def to(cls, broker, **kw) -> "RawKafka":
        return cls(broker.host, broker.port, **kw)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RawKafka":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def next_correlation_id(self) -> int:
        cid = self._next_id
        self._next_id += 1
        return cid

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, request, correlation_id: int | None = None) -> int:
        cid = self.next_correlation_id() if correlation_id is None else correlation_id
        self.send_bytes(encode_request(request, cid, self.client_id))
        return cid

    def _recv_exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise ConnectionError(f"broker closed the connection after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def recv_payload(self, timeout: float | None = None) -> bytes:
        """One response frame without its size prefix."""
        self.sock.settimeout(self.timeout if timeout is None else timeout)
        try:
            (size,) = _I32.unpack(self._recv_exactly(4))
            if not 4 <= size <= 256 << 20:
                raise ProtocolViolation(f"response frame size {size} is implausible")
            return self._recv_exactly(size)
        finally:
            self.sock.settimeout(self.timeout)

    def recv(self, api_key: int, version: int, correlation_id: int, timeout: float | None = None):
        got, body = decode_response(api_key, version, self.recv_payload(timeout))
        if got != correlation_id:
            raise ProtocolViolation(f"correlation id {got}, expected {correlation_id}")
        return body

    def call(self, request, timeout: float | None = None):
        """Send a kio request and return the decoded response of the same key and version."""
        cid = self.send(request)
        return self.recv(int(request.__api_key__), int(request.__version__), cid, timeout)

    def request(self, api_key: int, version: int, recv_timeout: float | None = None, **values):
        """Build (see `build`), send and decode. `timeout` in values is the request's own field."""
        return self.call(build_request(api_key, version, **values), recv_timeout)

    def no_reply_within(self, seconds: float) -> bool:
        """True when nothing arrives (and the connection stays open) for `seconds`."""
        self.sock.settimeout(seconds)
        try:
            data = self.sock.recv(1, socket.MSG_PEEK)
        except (socket.timeout, TimeoutError):
            return True
        finally:
            self.sock.settimeout(self.timeout)
        return False  # a reply, or EOF: either way not a silent open connection

    def drain_until_closed(self, timeout: float = 5.0) -> bytes | None:
        """Wait up to `timeout` for the broker to close (EOF or reset).

        Returns the bytes received before the close (b"" if none), None if still open.
        """
        deadline = time.monotonic() + timeout
        received = bytearray()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, TimeoutError):
                return None
            except (ConnectionResetError, BrokenPipeError):
                return bytes(received)
            finally:
                self.sock.settimeout(self.timeout)
            if not chunk:
                return bytes(received)
            received += chunk

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        return self.drain_until_closed(timeout) is not None


# --- record batches ------------------------------------------------------------------

def make_batch(values, timestamps=None, keys=None, headers=None, producer_id: int = -1,
               producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """A real record batch v2 (kafka-python's builder), offsets 0..n-1, uncompressed."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, batch_size=1 << 30)
    now = int(time.time() * 1000)
    for i, value in enumerate(values):
        ts = timestamps[i] if timestamps is not None else now
        key = keys[i] if keys is not None else None
        assert builder.append(i, ts, key, value, headers[i] if headers else []) is not None
    return bytes(builder.build())


BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
BATCH_FIELDS = ("base_offset", "batch_length", "leader_epoch", "magic", "crc", "attributes",
                "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
                "producer_epoch", "base_sequence", "record_count")


def batch_header(buf: bytes, pos: int = 0) -> dict:
    return dict(zip(BATCH_FIELDS, BATCH_HEADER.unpack_from(buf, pos)))


def split_batches(buf: bytes | None) -> tuple[list[bytes], bytes]:
    """(complete batches, trailing partial bytes): Kafka may end a fetch inside a batch."""
    out = []
    buf = buf or b""
    pos = 0
    while pos + 12 <= len(buf):
        (length,) = _I32.unpack_from(buf, pos + 8)
        if pos + 12 + length > len(buf):
            break
        out.append(buf[pos:pos + 12 + length])
        pos += 12 + length
    return out, buf[pos:]


def as_stored(batch: bytes, base_offset: int, leader_epoch: int = 0) -> bytes:
    """What a broker stores for a produced batch: baseOffset and partitionLeaderEpoch rewritten."""
    out = bytearray(batch)
    struct.pack_into(">q", out, 0, base_offset)
    struct.pack_into(">i", out, 12, leader_epoch)
    return bytes(out)


def recrc(batch: bytes) -> bytes:
    """Recompute a batch's CRC32C after editing a header field inside the CRC-covered region."""
    import crc32c

    out = bytearray(batch)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def read_records(buf: bytes | None) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every record in complete batches, via kafka-python."""
    from kafka.record.memory_records import MemoryRecords

    complete, _ = split_batches(buf)
    out = []
    for batch_bytes in complete:
        records = MemoryRecords(batch_bytes)
        batch = records.next_batch()
        out.extend((r.offset, r.timestamp, r.key, r.value) for r in batch)
    return out


# --- conveniences at the versions the tests use as their reference path ---------------

REF = {"produce": 9, "fetch": 12, "list_offsets": 7, "metadata": 12, "create_topics": 7}


class Client(RawKafka):
    """RawKafka plus one-liners for setting up and checking state."""

    def create_topic(self, name: str, partitions: int = 1, configs: dict | None = None):
        resp = self.request(19, REF["create_topics"], topics=[{
            "name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
            validate_only=False, timeout=10_000)
        (t,) = resp.topics
        assert t.error_code == 0, f"CreateTopics {name}: {t.error_code!r} {t.error_message}"
        return t.topic_id

    def produce(self, topic: str, partition: int, records: bytes | None, acks: int = -1,
                version: int = REF["produce"], transactional_id: str | None = None):
        """The one partition response (asserting it names what was asked); v13+ name the topic by id."""
        topic_id = self.topic_id(topic) if version >= PRODUCE_BY_TOPIC_ID else None
        resp = self.request(0, version, transactional_id=transactional_id, acks=acks, timeout=10_000,
                            topic_data=[{"name": topic, "topic_id": topic_id, "partition_data": [
                                {"index": partition, "records": records}]}])
        (t,) = resp.responses
        assert (t.topic_id if version >= PRODUCE_BY_TOPIC_ID else t.name) == (topic_id or topic)
        (p,) = t.partition_responses
        assert p.index == partition
        return p

    def produced(self, topic: str, partition: int, records: bytes) -> int:
        """The base offset of an acks=all produce that must succeed."""
        p = self.produce(topic, partition, records)
        assert p.error_code == 0, p
        return p.base_offset

    def fetch(self, topic: str, partition: int, offset: int, max_wait_ms: int = 0, min_bytes: int = 0,
              max_bytes: int = 50 << 20, partition_max_bytes: int = 10 << 20,
              version: int = REF["fetch"], timeout: float | None = None):
        resp = self.request(1, version, recv_timeout=timeout, **fetch_values(
            [(topic, [(partition, offset, partition_max_bytes)])], max_wait_ms, min_bytes, max_bytes))
        (t,) = resp.responses
        assert t.topic == topic
        (p,) = t.partitions
        assert p.partition_index == partition
        return p

    def list_offset(self, topic: str, partition: int, timestamp: int, version: int = REF["list_offsets"]):
        resp = self.request(2, version, replica_id=-1, isolation_level=0, topics=[
            {"name": topic, "partitions": [{"partition_index": partition, "timestamp": timestamp,
                                            "current_leader_epoch": -1}]}])
        (t,) = resp.topics
        (p,) = t.partitions
        return p

    def log_end_offset(self, topic: str, partition: int = 0) -> int:
        p = self.list_offset(topic, partition, -1)
        assert p.error_code == 0, p
        return p.offset

    def metadata(self, names: list[str] | None, allow_auto: bool = False, version: int = REF["metadata"]):
        topics = None if names is None else [{"name": n, "topic_id": None} for n in names]
        return self.request(3, version, topics=topics, allow_auto_topic_creation=allow_auto,
                            include_cluster_authorized_operations=False,
                            include_topic_authorized_operations=False)

    def topic_id(self, name: str):
        (t,) = self.metadata([name]).topics
        assert t.error_code == 0, t
        return t.topic_id

    def stored_bytes(self, topic: str, partition: int = 0) -> bytes:
        p = self.fetch(topic, partition, 0)
        assert p.error_code == 0, p
        return bytes(p.records or b"")


def fetch_values(topics, max_wait_ms: int = 0, min_bytes: int = 0, max_bytes: int = 50 << 20,
                 topic_ids: dict | None = None) -> dict:
    """Fetch request values for [(topic, [(partition, offset, partition_max_bytes)])], any version;
    v13+ name topics by id only, so they need `topic_ids` (name -> id)."""
    ids = topic_ids or {}
    return dict(
        replica_id=-1, max_wait=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
        topics=[{"topic": name, "topic_id": ids.get(name), "partitions": [
            {"partition": p, "current_leader_epoch": -1, "fetch_offset": off, "last_fetched_epoch": -1,
             "log_start_offset": -1, "partition_max_bytes": pmb} for p, off, pmb in parts]}
            for name, parts in topics])
