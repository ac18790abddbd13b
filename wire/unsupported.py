"""Answers to requests in versions we do not serve, where the protocol has one.

Two cases have a defined answer in Kafka:

- ApiVersions above our range: a v0-format response (the client cannot know
  our format yet) with error UNSUPPORTED_VERSION and our ranges; clients then
  retry with the highest version we listed.

      correlation_id i32 | error_code i16 = 35 | [api_key i16, min i16, max i16] (i32 count)

- Produce v0-v2: listed (librdkafka turns compression off otherwise) but, as in
  Kafka 4, answered UNSUPPORTED_VERSION for every partition:

      v0: correlation_id | [topic string, [partition i32, error i16, base_offset i64]]
      v1: v0 + throttle_time_ms i32 at the end
      v2: each partition also carries log_append_time i64

  The v0-v2 request is v3 without transactional_id, so it is decoded with the
  v3 reader after prefixing a null transactional_id.

Any other unsupported version has no answer the client could parse: the
caller closes the connection with a log line, as Kafka does.
"""

from __future__ import annotations

import struct

from .protocol import SERVED_VERSIONS, PeerProtocolError, RequestHeader, _reader, request_class
from .request_bounds import check_request_body

UNSUPPORTED_VERSION = 35

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_RANGE = struct.Struct(">hhh")


def _string(s: str) -> bytes:
    raw = s.encode()
    return _I16.pack(len(raw)) + raw


def api_versions_v0(correlation_id: int, error_code: int) -> bytes:
    """A whole framed ApiVersions v0 response listing SERVED_VERSIONS."""
    body = bytearray(_I32.pack(correlation_id))
    body += _I16.pack(error_code)
    body += _I32.pack(len(SERVED_VERSIONS))
    for key, (lo, hi) in sorted(SERVED_VERSIONS.items()):
        body += _RANGE.pack(key, lo, hi)
    return _I32.pack(len(body)) + bytes(body)


def produce_legacy(header: RequestHeader, frame: bytes, body_pos: int) -> bytes | None:
    """A framed UNSUPPORTED_VERSION answer to Produce v0-v2; None when acks=0 (no answer)."""
    v3 = request_class(0, 3)
    body = b"\xff\xff" + frame[body_pos:]  # v3's null transactional id, then v0-v2's fields
    check_request_body(v3, body, 0)
    try:
        request, _ = _reader(v3)(body, 0)
    except Exception as exc:
        raise PeerProtocolError(f"malformed Produce v{header.api_version}: {exc}") from exc
    if request.acks == 0:
        return None
    out = bytearray(_I32.pack(header.correlation_id))
    out += _I32.pack(len(request.topic_data))
    for topic in request.topic_data:
        out += _string(topic.name)
        out += _I32.pack(len(topic.partition_data))
        for part in topic.partition_data:
            out += _I32.pack(part.index) + _I16.pack(UNSUPPORTED_VERSION) + _I64.pack(-1)
            if header.api_version >= 2:
                out += _I64.pack(-1)
    if header.api_version >= 1:
        out += _I32.pack(0)
    return _I32.pack(len(out)) + bytes(out)


def header_offsets(frame: bytes) -> int:
    """Where a non-flexible request body starts (after header v1)."""
    (client_len,) = _I16.unpack_from(frame, 8)
    return 10 + max(client_len, 0)


def answer(header: RequestHeader, frame: bytes) -> bytes | None:
    """The framed reply to an unsupported version, or None if the connection must close.

    acks=0 Produce also yields None, but with nothing to close: callers tell the
    two apart through `closes_connection`.
    """
    if header.api_key == 18:
        return api_versions_v0(header.correlation_id, UNSUPPORTED_VERSION)
    if header.api_key == 0 and 0 <= header.api_version < 3:
        return produce_legacy(header, frame, header_offsets(frame))
    return None


def closes_connection(header: RequestHeader) -> bool:
    if header.api_key == 18:
        return False
    lo, hi = SERVED_VERSIONS.get(header.api_key, (0, -1))
    return not (header.api_key == 0 and 0 <= header.api_version < 3 and lo == 0)
