"""The client side of the codec: typed request → frame bytes, response frame → typed response.

The broker's own outbound connections (a follower fetching from its leader) speak the same
protocol as any Kafka client, so this is the mirror image of protocol.py's server side:

    request frame:   size i32 | api_key i16 | api_version i16 | correlation_id i32
                     | client_id nullable string(i16) | [tagged fields: uvarint 0, if flexible]
                     | body
    response frame:  size i32 | correlation_id i32 | [tagged fields, if flexible] | body

A request uses header v2 (with tagged fields) when its version is flexible, v1 otherwise; a
response uses header v1 when its version is flexible, v0 otherwise, except ApiVersions, which
always answers with header v0 (KIP-511). The size prefix is stripped by framing.FrameDecoder
before a response reaches `decode_response`.

Sans-IO: the caller owns the socket and matches responses to requests by correlation id.
A response that does not parse is the peer's fault: PeerProtocolError.
"""

from __future__ import annotations

import struct

from .framing import PeerProtocolError
from .protocol import API_VERSIONS_KEY, _reader, _writer, is_flexible, response_class, skip_tagged_fields

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_REQUEST_HEADER = struct.Struct(">hhi")


class _Buffer(bytearray):
    """A bytearray with the write() kio's writers call."""

    def write(self, data) -> int:
        self += data
        return len(data)


def encode_request(body, correlation_id: int, client_id: str | None) -> bytes:
    """One whole request frame, size prefix included, for a kio request entity."""
    api_key, version = body.__api_key__, body.__version__
    out = _Buffer(b"\x00\x00\x00\x00")  # the size, patched below
    out += _REQUEST_HEADER.pack(api_key, version, correlation_id)
    if client_id is None:
        out += _I16.pack(-1)
    else:
        raw = client_id.encode()
        out += _I16.pack(len(raw)) + raw
    if is_flexible(api_key, version):
        out.append(0)  # request header v2: no tagged fields
    _writer(type(body))(out, body)
    _I32.pack_into(out, 0, len(out) - _I32.size)
    return bytes(out)


def response_correlation_id(frame: bytes) -> int:
    """The correlation id a response frame (without its size prefix) answers."""
    if len(frame) < _I32.size:
        raise PeerProtocolError(f"response of {len(frame)} bytes is shorter than its header")
    return _I32.unpack_from(frame)[0]


def decode_response(frame: bytes, api_key: int, version: int):
    """The typed response in `frame`, read as the answer to request (api_key, version).

    Every byte must belong to the response: trailing bytes mean we and the peer disagree
    about the schema, and nothing read from such a frame can be trusted."""
    pos = _I32.size
    if api_key != API_VERSIONS_KEY and is_flexible(api_key, version):
        pos = skip_tagged_fields(frame, pos)
    cls = response_class(api_key, version)
    try:
        body, size = _reader(cls)(frame, pos)
    except Exception as exc:  # the native reader raises a few types on garbage
        raise PeerProtocolError(f"malformed {cls.__name__} v{version}: {type(exc).__name__}: {exc}") from exc
    if pos + size != len(frame):
        raise PeerProtocolError(
            f"{cls.__name__} v{version}: {len(frame) - pos - size} bytes left after the response")
    return body
