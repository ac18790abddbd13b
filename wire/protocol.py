"""Requests in, responses out: headers, the API table, and the typed message codec.

Codec choice (measured on this machine, Python 3.11, a Produce v9 request of 1 KiB):
kio 0.6.5 decodes it in 0.7 us (its readers are native code), kafka-python
3.0.12's protocol classes in 3.9 us; a Metadata v12 response encodes in ~21 us
with kio. kio's messages are frozen, typed dataclasses generated from Kafka's
JSON schemas, one class per version, and its version coverage matches Kafka 4
(Produce from v3, Fetch from v4), which is what we serve. So kio it is.

Header layouts:

    request header v1: api_key i16 | api_version i16 | correlation_id i32 | client_id nullable string(i16)
    request header v2: v1 + tagged fields (uvarint count, then tags)
    response header v0: correlation_id i32
    response header v1: correlation_id i32 + tagged fields

A request uses header v2 when its API version is flexible; ApiVersions always
answers with response header v0 (KIP-511), so old clients can parse the reply.
"""

from __future__ import annotations

import copy
import struct
from dataclasses import dataclass
from functools import cache

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from .framing import PeerProtocolError
from .request_bounds import check_request_body
from .varint import MalformedVarint, read_varint

API_VERSIONS_KEY = 18
PRODUCE_KEY = 0

# The versions we serve, per API key. A range we list is a range we serve.
# Produce is listed from v0 because librdkafka disables compression otherwise;
# v0-v2 are answered UNSUPPORTED_VERSION, as Kafka 4 does.
SERVED_VERSIONS: dict[int, tuple[int, int]] = {
    0: (0, 13),  # Produce
    1: (4, 18),  # Fetch
    2: (1, 11),  # ListOffsets (v11: KIP-1023's earliest pending upload, -6)
    3: (0, 13),  # Metadata
    8: (2, 10),  # OffsetCommit (v10: topics by id)
    9: (1, 10),  # OffsetFetch (v10: topics by id)
    10: (0, 6),  # FindCoordinator
    11: (0, 9),  # JoinGroup
    12: (0, 4),  # Heartbeat
    13: (0, 5),  # LeaveGroup
    14: (0, 5),  # SyncGroup
    15: (0, 6),  # DescribeGroups
    16: (0, 5),  # ListGroups
    17: (0, 1),  # SaslHandshake
    18: (0, 4),  # ApiVersions
    19: (2, 7),  # CreateTopics
    20: (1, 6),  # DeleteTopics
    21: (0, 2),  # DeleteRecords
    22: (0, 5),  # InitProducerId
    23: (2, 4),  # OffsetForLeaderEpoch (v0-v1 gone in Kafka 4, KIP-896)
    24: (0, 5),  # AddPartitionsToTxn (v4+: a leader's verification, KIP-890)
    25: (0, 4),  # AddOffsetsToTxn
    26: (0, 5),  # EndTxn (v5: transactions V2, an epoch bump per end, KIP-890)
    27: (1, 2),  # WriteTxnMarkers (v0 gone in Kafka 4, KIP-896)
    28: (0, 5),  # TxnOffsetCommit
    29: (1, 3),  # DescribeAcls (v0 gone in Kafka 4, KIP-896)
    30: (1, 3),  # CreateAcls
    31: (1, 3),  # DeleteAcls
    32: (1, 4),  # DescribeConfigs
    33: (0, 2),  # AlterConfigs
    34: (1, 2),  # AlterReplicaLogDirs (v0 gone in Kafka 4, KIP-896)
    36: (0, 2),  # SaslAuthenticate
    # DescribeLogDirs (v0 gone in Kafka 4; v5: KIP-1066's is_cordoned). kafka-python reads v5
    # alone as "Kafka 4.3", and a client configured for an older Kafka then sends that version's
    # own table instead of ours: every version of those tables must be served (it is, for each
    # API listed here; compat_tests/admin/test_admin_api_clients.py checks 4.0 to 4.3).
    35: (1, 5),
    37: (0, 3),  # CreatePartitions
    # KIP-48 delegation tokens (v0 gone in Kafka 4, KIP-896)
    38: (1, 3),  # CreateDelegationToken (v3: another owner, KIP-373)
    39: (1, 2),  # RenewDelegationToken
    40: (1, 2),  # ExpireDelegationToken
    41: (1, 3),  # DescribeDelegationToken
    42: (0, 2),  # DeleteGroups
    43: (0, 2),  # ElectLeaders
    44: (0, 1),  # IncrementalAlterConfigs
    45: (0, 1),  # AlterPartitionReassignments
    46: (0, 0),  # ListPartitionReassignments
    47: (0, 0),  # OffsetDelete
    48: (0, 1),  # DescribeClientQuotas
    49: (0, 1),  # AlterClientQuotas
    50: (0, 0),  # DescribeUserScramCredentials
    51: (0, 0),  # AlterUserScramCredentials
    57: (0, 2),  # UpdateFeatures (KIP-584): transaction.version, group.version, share.version
    60: (0, 2),  # DescribeCluster
    61: (0, 0),  # DescribeProducers
    65: (0, 0),  # DescribeTransactions
    66: (0, 2),  # ListTransactions
    68: (0, 1),  # ConsumerGroupHeartbeat (KIP-848)
    69: (0, 1),  # ConsumerGroupDescribe
    74: (0, 1),  # ListConfigResources (v0: ListClientMetricsResources)
    75: (0, 0),  # DescribeTopicPartitions
    # KIP-932 share groups: v1, what Kafka 4.1+ serves (v0 was 4.0's early access); ShareFetch /
    # ShareAcknowledge v2, Kafka 4.2's: KIP-1206's record-limit acquisition, KIP-1222's RENEW
    76: (1, 1),  # ShareGroupHeartbeat
    77: (1, 1),  # ShareGroupDescribe
    78: (1, 2),  # ShareFetch
    79: (1, 2),  # ShareAcknowledge
    # KIP-932's share coordinator, called by share-partition leaders (Kafka 4.2's versions)
    83: (0, 0),  # InitializeShareGroupState
    84: (0, 0),  # ReadShareGroupState
    85: (0, 1),  # WriteShareGroupState (v1: KIP-1226's DeliveryCompleteCount)
    86: (0, 0),  # DeleteShareGroupState
    87: (0, 1),  # ReadShareGroupStateSummary (v1: KIP-1226's DeliveryCompleteCount)
    # KIP-1071 streams groups (Kafka 4.2+'s versions)
    88: (0, 0),  # StreamsGroupHeartbeat
    89: (0, 0),  # StreamsGroupDescribe
    # KIP-932's admin side, served by the group coordinator (Kafka 4.2's versions)
    90: (0, 1),  # DescribeShareGroupOffsets (v1: KIP-1226's lag)
    91: (0, 0),  # AlterShareGroupOffsets
    92: (0, 0),  # DeleteShareGroupOffsets
}
PRODUCE_MIN_DECODED = 3

_SHORT = struct.Struct(">hhi")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class UnsupportedApi(PeerProtocolError):
    """An API key we do not serve: Kafka closes the connection."""


class UnsupportedVersion(Exception):
    """A version outside our range; ApiVersions answers it, others close."""

    def __init__(self, header: RequestHeader) -> None:
        super().__init__(f"api {header.api_key} v{header.api_version} not supported")
        self.header = header


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    flexible: bool


@cache
def request_class(api_key: int, version: int):
    return load_request_schema(api_key, version)


@cache
def response_class(api_key: int, version: int):
    return load_response_schema(api_key, version)


@cache
def _reader(cls):
    return entity_reader(cls)


@cache
def _writer(cls):
    return entity_writer(cls)


def is_flexible(api_key: int, version: int) -> bool:
    if api_key == PRODUCE_KEY and version < PRODUCE_MIN_DECODED:
        return False
    return bool(request_class(api_key, version).__flexible__)


def skip_tagged_fields(frame: bytes, pos: int) -> int:
    """Past a header's tagged fields (requests here, responses in client_codec.py)."""
    end = len(frame)
    try:
        count, pos = read_varint(frame, pos, end, unsigned=True)
        for _ in range(count):
            _tag, pos = read_varint(frame, pos, end, unsigned=True)
            size, pos = read_varint(frame, pos, end, unsigned=True)
            pos += size
    except MalformedVarint as exc:
        raise PeerProtocolError(f"malformed tagged fields in a header: {exc}") from None
    if pos > end:
        raise PeerProtocolError("tagged fields run past the end of the header")
    return pos


def parse_header(frame: bytes) -> tuple[RequestHeader, int]:
    """Decode the request header; returns it and where the body starts.

    Raises UnsupportedApi for unknown keys, UnsupportedVersion (carrying the
    header) for versions outside our range, PeerProtocolError for garbage.
    """
    if len(frame) < 10:
        raise PeerProtocolError(f"request of {len(frame)} bytes is shorter than a header")
    api_key, api_version, correlation_id = _SHORT.unpack_from(frame, 0)
    (client_len,) = _I16.unpack_from(frame, 8)
    pos = 10
    client_id = None
    if client_len >= 0:
        if pos + client_len > len(frame):
            raise PeerProtocolError("client_id runs past the end of the request")
        client_id = frame[pos : pos + client_len].decode("utf-8", "replace")
        pos += client_len
    served = SERVED_VERSIONS.get(api_key)
    if served is None:
        raise UnsupportedApi(f"api key {api_key} is not served")
    lo, hi = served
    if not lo <= api_version <= hi or (api_key == PRODUCE_KEY and api_version < PRODUCE_MIN_DECODED):
        raise UnsupportedVersion(RequestHeader(api_key, api_version, correlation_id, client_id, False))
    flexible = is_flexible(api_key, api_version)
    if flexible:
        pos = skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id, flexible), pos


def decode_request(frame: bytes):
    """Header and typed request body; see parse_header for the errors."""
    header, pos = parse_header(frame)
    cls = request_class(header.api_key, header.api_version)
    try:
        check_request_body(cls, frame, pos)
        body, _size = _reader(cls)(frame, pos)
    except PeerProtocolError as exc:  # the log line names the request, as Kafka's does
        raise PeerProtocolError(f"malformed {cls.__name__} v{header.api_version}: {exc}") from None
    except Exception as exc:  # the native reader raises a few types on garbage
        raise PeerProtocolError(
            f"malformed {cls.__name__} v{header.api_version}: {type(exc).__name__}: {exc}"
        ) from exc
    return header, body


_SIZE_PLACEHOLDER = b"\x00\x00\x00\x00"  # patched with the frame size once it is known


class ChunkWriter:
    """A Writable for kio that keeps record regions out of the byte buffer.

    Fetch responses carry record bytes as `RecordRegions`; the writer splits
    its output there so the transport can send those parts with sendfile.
    """

    __slots__ = ("chunks", "_cur", "size")

    def __init__(self) -> None:
        self.chunks: list = []
        self._cur = bytearray()
        self.size = 0

    def write(self, data) -> int:
        if isinstance(data, RecordRegions):
            if self._cur:
                self.chunks.append(self._cur)  # handed over, not copied: a fresh buffer follows
                self._cur = bytearray()
            self.chunks.extend(data.regions)
            self.size += data.total
            return data.total
        self._cur += data
        self.size += len(data)
        return len(data)

    def finish(self) -> list:
        if self._cur:
            self.chunks.append(self._cur)
            self._cur = bytearray()
        return self.chunks


class RecordRegions(bytes):
    """Record bytes that live in files: an empty bytes whose len() is the regions' size.

    kio's bytes writers call len() and write(); ChunkWriter recognises the type.
    Each region has a `size` attribute (segment.log.FileRegion) or is bytes.
    """

    def __new__(cls, regions: list):
        self = super().__new__(cls, b"")
        self.regions = regions
        self.total = sum(r.size if hasattr(r, "size") else len(r) for r in regions)
        return self

    def __len__(self) -> int:
        return self.total


class EncodedBody:
    """A response body a handler wrote itself (wire/metadata_response.py), with what the broker
    still reads from it: its error codes other than NONE (metrics) and the position of its
    throttle_time_ms, None where the version has none. `data` is bytes, or a list of bytes and
    RecordRegions (wire/follower_fetch_response.py), which has no throttle_time_ms to patch."""

    __slots__ = ("data", "errors", "throttle_at")

    def __init__(self, data: bytes | list, errors: list, throttle_at: int | None) -> None:
        self.data, self.errors, self.throttle_at = data, errors, throttle_at

    def pieces(self) -> list:
        return self.data if isinstance(self.data, list) else [self.data]

    def with_throttle(self, ms: int) -> EncodedBody:
        if self.throttle_at is None:
            return self
        data = bytearray(self.data)
        _I32.pack_into(data, self.throttle_at, ms)
        patched = copy.copy(self)  # a subclass keeps what it carries for the metrics
        patched.data = bytes(data)
        return patched


def fetch_replica_id(request) -> int:
    """A Fetch request's fetching follower's broker id, -1 for a consumer: v15+ moved it into
    replica_state."""
    state = getattr(request, "replica_state", None)
    found: int = state.replica_id if state is not None else request.replica_id
    return found


def encode_response(header: RequestHeader, body) -> list:
    """Frame a typed response: a list of byte buffers and record regions, starting with the
    size prefix. The prefix is written into the first buffer rather than sent as a chunk of
    its own: the transport writes each chunk as it comes, and a response without record
    regions then goes out as one write (one send, one TCP segment)."""
    head = _I32.pack(header.correlation_id)
    if header.flexible and header.api_key != API_VERSIONS_KEY:
        head += b"\x00"  # response header v1: no tagged fields
    if isinstance(body, EncodedBody) and not isinstance(body.data, list):  # written already: one buffer
        return [_I32.pack(len(head) + len(body.data)) + head + body.data]
    out = ChunkWriter()
    out.write(_SIZE_PLACEHOLDER)
    out.write(head)
    if isinstance(body, EncodedBody):
        for piece in body.pieces():
            out.write(piece)
    else:
        _writer(type(body))(out, body)
    chunks = out.finish()
    _I32.pack_into(chunks[0], 0, out.size - _I32.size)
    return chunks


def response_for(header: RequestHeader):
    """The response class matching a request's API key and version."""
    return response_class(header.api_key, header.api_version)
