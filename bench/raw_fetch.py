"""A Fetch reader that only counts bytes: the broker's fetch path without a client's costs.

The consume phases' confluent-kafka consumer copies every byte twice (librdkafka's buffers,
then a Python bytes per record) and turns each record into an object; at 16 KB records it is
what limits a hot fetch (the broker's loop idles 31-45% meanwhile). This reader is the loopback
limit's reader (machine_ceilings.py: recv_into one reused buffer) speaking Kafka: one Fetch v4
request in flight, as a consumer keeps for one broker, `fetch_bytes` per answer, and from each
answer only the batch headers are read, to check the offsets run on and to find the next one.
So "fetch ÷ loopback" compares the broker's path with sendfile's alone, the same reader on both.

Fetch v4 on the wire (non-flexible; Kafka 4 still serves 4-17):
    request:  size:i32 | api_key=1:i16 | version=4:i16 | correlation:i32 | client_id:str16 |
              replica_id=-1:i32 | max_wait_ms:i32 | min_bytes:i32 | max_bytes:i32 |
              isolation_level:i8 | [topic:str16 | [partition:i32 | offset:i64 | max_bytes:i32]]
    response: size:i32 | correlation:i32 | throttle_ms:i32 | [topic:str16 | [partition:i32 |
              error:i16 | high_watermark:i64 | last_stable:i64 | [aborted: 16 B each] |
              records:bytes32]]
A record batch starts base_offset:i64 | length:i32, its last offset delta at byte 23 and its
record count at byte 57; an answer may end with part of a batch, which is fetched again.
"""

from __future__ import annotations

import os
import socket
import struct
import time

from load_workers import PhaseError, _cpu_self, _pin

BATCH_HEAD = 61  # bytes of a v2 batch header: the last field, the record count, ends here
CLIENT_ID = b"twinlog-bench-raw"


def _request(correlation: int, topic: bytes, partition: int, offset: int, max_bytes: int) -> bytes:
    body = (struct.pack(">hhih", 1, 4, correlation, len(CLIENT_ID)) + CLIENT_ID +
            struct.pack(">iiiibi", -1, 100, 1, max_bytes, 0, 1) + struct.pack(">h", len(topic)) + topic +
            struct.pack(">iiqi", 1, partition, offset, max_bytes))
    return struct.pack(">i", len(body)) + body


def _recv_exactly(sock: socket.socket, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if not n:
            raise PhaseError("the broker closed the connection")
        got += n


def _batches(buf: bytearray, size: int, expected: int) -> tuple[int, int]:
    """(the offset after the last whole batch, records in the whole batches) of one answer;
    raises PhaseError on an error code or a batch that does not start where the last ended."""
    pos = 12  # correlation, throttle, topic count
    pos += 2 + struct.unpack_from(">h", buf, pos)[0] + 8  # topic name, partition count, partition
    error = struct.unpack_from(">h", buf, pos)[0]
    if error:
        raise PhaseError(f"fetch error code {error}")
    pos += 18
    pos += 4 + 16 * max(struct.unpack_from(">i", buf, pos)[0], 0)
    end = pos + 4 + struct.unpack_from(">i", buf, pos)[0]
    pos += 4
    records = 0
    while pos + BATCH_HEAD <= min(end, size):
        base, length = struct.unpack_from(">qi", buf, pos)
        if pos + 12 + length > end:
            break
        if base != expected:
            raise PhaseError(f"batch at offset {base}, expected {expected}")
        expected = base + struct.unpack_from(">i", buf, pos + 23)[0] + 1
        records += struct.unpack_from(">i", buf, pos + 57)[0]
        pos += 12 + length
    return expected, records


def raw_fetch_worker(p: dict, ready, go, out) -> None:
    """Read partition p["partition"] of p["topic"] from p["low"] to p["high"] once."""
    _pin(p["cpus"])
    host, port = p["bootstrap"].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytearray(p["fetch_bytes"] + (1 << 20))
    view = memoryview(buf)
    topic, offset, high = p["topic"].encode(), p["low"], p["high"]
    ready.put(os.getpid())
    go.wait(60)
    cpu0, t0 = _cpu_self(), time.monotonic()
    deadline, nbytes, records, correlation = t0 + p["seconds"], 0, 0, 0
    while offset < high and time.monotonic() < deadline:
        correlation += 1
        sock.sendall(_request(correlation, topic, p["partition"], offset, p["fetch_bytes"]))
        _recv_exactly(sock, view[:4])
        size = struct.unpack_from(">i", buf, 0)[0]
        if size > len(buf):
            raise PhaseError(f"a {size}-byte answer to a {p['fetch_bytes']}-byte fetch")
        _recv_exactly(sock, view[:size])
        nbytes += 4 + size
        offset, n = _batches(buf, size, offset)
        records += n
    t1, cpu1 = time.monotonic(), _cpu_self()
    sock.close()
    out.put({"worker": os.getpid(), "consumed": records, "end_offset": offset, "bytes": nbytes,
             "t0": t0, "t1": t1, "client_cpu_s": cpu1 - cpu0})
