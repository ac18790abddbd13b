"""A Fetch reader that only counts bytes: the broker's fetch path without a client's costs.

The consume phases' confluent-kafka consumer copies every byte twice (librdkafka's buffers,
then a Python bytes per record) and turns each record into an object; at 16 KB records it is
what limits a hot fetch (the broker's loop idles 31-45% meanwhile). This reader is the loopback
limit's reader (machine_ceilings.py: recv_into one reused buffer) speaking Kafka: one Fetch
request in flight, as a consumer keeps for one broker, `fetch_bytes` per answer, and from each
answer only the batch headers are read, to check the offsets run on and to find the next one.
So "fetch ÷ loopback" compares the broker's path with sendfile's alone, the same reader on both.

The wire is the broker's own follower code, asked as a consumer (replica id -1): the Fetch v12
request of wire/inter_broker.py, its answer read in place by wire/fetch_response_view.py, the
batches walked by wire/record_batch.iter_batches. An answer may end with part of a batch,
which the next fetch asks for again. Bytes counted are the answers' frames, as the loopback
reader counts what it received.

It takes fetch_worker's parameters and gives its figures (load_workers.py), so
compare_cells.consume_pass runs either.
"""

from __future__ import annotations

import os
import socket
import struct
import time

from wire.client_codec import encode_request
from wire.error_codes import ErrorCode
from wire.fetch_response_view import read_fetch_response_frame
from wire.inter_broker import FetchPartitionRequest, fetch_request
from wire.record_batch import iter_batches

from load_workers import PhaseError, _cpu_self, _pin

CONSUMER = -1  # the replica id of a client's Fetch
_SIZE = struct.Struct(">i")


def _recv_exactly(sock: socket.socket, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if not n:
            raise PhaseError("the broker closed the connection")
        got += n


def _read(sock: socket.socket, buf: bytearray, topic: str, partition: int, low: int, high: int,
          fetch_bytes: int, deadline: float) -> tuple[int, int]:
    """(records, bytes) of one partition read from `low` to `high` (or until the deadline)."""
    view = memoryview(buf)
    offset, records, nbytes, correlation = low, 0, 0, 0
    while offset < high and time.monotonic() < deadline:
        correlation += 1
        sock.sendall(encode_request(fetch_request(CONSUMER, 100, 1, fetch_bytes, fetch_bytes, 0, [
            FetchPartitionRequest(topic, partition, -1, offset, 0)]), correlation, "twinlog-bench-raw"))
        _recv_exactly(sock, view[:4])
        (size,) = _SIZE.unpack_from(buf)
        if size > len(buf):
            raise PhaseError(f"a {size}-byte answer to a {fetch_bytes}-byte fetch")
        _recv_exactly(sock, view[:size])
        nbytes += 4 + size
        _top, _session, (answer,) = read_fetch_response_frame(view[:size])
        if answer.error is not ErrorCode.none:
            raise PhaseError(f"{topic}-{partition}: fetch answered {answer.error.name}")
        for _pos, header in iter_batches(answer.records):
            if header.base_offset != offset:
                raise PhaseError(f"{topic}-{partition}: batch at offset {header.base_offset}, expected {offset}")
            offset, records = header.last_offset + 1, records + header.record_count
    return records, nbytes


def raw_fetch_worker(p: dict, ready, go, out) -> None:
    """Read every record of `p["ranges"]` ({partition: [low, high)}) once, one partition after
    another."""
    _pin(p["cpus"])
    host, port = p["bootstrap"].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytearray(p["fetch_bytes"] + (1 << 20))
    ready.put(os.getpid())
    go.wait(60)
    cpu0, t0 = _cpu_self(), time.monotonic()
    consumed = nbytes = 0
    for partition, (low, high) in p["ranges"].items():
        n, size = _read(sock, buf, p["topic"], int(partition), low, high, p["fetch_bytes"], t0 + p["seconds"])
        consumed, nbytes = consumed + n, nbytes + size
    t1, cpu1 = time.monotonic(), _cpu_self()
    sock.close()
    out.put({"worker": os.getpid(), "consumed": consumed, "bytes": nbytes, "t0": t0, "t1": t1,
             "client_cpu_s": cpu1 - cpu0})
