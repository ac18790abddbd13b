"""BrokerConnection against a scripted peer on loopback: what it does when the peer misbehaves.

The peer is a real asyncio TCP server that reads our request frames and answers each with an
ApiVersions v3 response encoded by the broker's own encoder, except where the test scripts a
wrong correlation id, garbage or silence. Well-behaved leaders are covered against a real
broker in compat_tests/cluster/test_replica_fetch.py.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import time

import pytest
from kio.schema.errors import ErrorCode

from replica.broker_connection import BrokerConnection, ConnectionFailed
from wire.framing import FrameDecoder
from wire.protocol import RequestHeader, encode_response, request_class, response_class

REQUEST = request_class(18, 3)(client_software_name="t", client_software_version="1")


def answer(correlation_id: int, error: ErrorCode = ErrorCode.none) -> bytes:
    body = response_class(18, 3)(error_code=error, api_keys=(), throttle_time=datetime.timedelta(0))
    return b"".join(bytes(c) for c in encode_response(RequestHeader(18, 3, correlation_id, "t", True), body))


class ScriptedPeer:
    """Answers request n with script(n, correlation_id) -> bytes to send (b"": stay silent)."""

    def __init__(self, script) -> None:
        self.script = script
        self.requests = 0
        self.connections = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        frames = FrameDecoder()
        while data := await reader.read(65536):
            for frame in frames.feed(data):
                correlation_id = int.from_bytes(frame[4:8], "big")
                writer.write(self.script(self.requests, correlation_id))
                self.requests += 1
        writer.close()


async def with_peer(script, test) -> ScriptedPeer:
    peer = ScriptedPeer(script)
    server = await asyncio.start_server(peer.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connection = BrokerConnection("127.0.0.1", port, "t", request_timeout_ms=500)
    try:
        await test(connection)
    finally:
        await connection.close()
        server.close()
    return peer


def test_answers_are_matched_to_their_requests():
    async def test(connection):
        errors = [ErrorCode.none, ErrorCode.unsupported_version, ErrorCode.none]
        got = await asyncio.gather(*(connection.request(REQUEST) for _ in errors))
        assert [r.error_code for r in got] == errors

    codes = [ErrorCode.none, ErrorCode.unsupported_version, ErrorCode.none]
    peer = asyncio.run(with_peer(lambda n, cid: answer(cid, codes[n]), test))
    assert peer.connections == 1


def test_an_answer_out_of_turn_drops_the_connection_and_the_next_request_reconnects():
    async def test(connection):
        with pytest.raises(ConnectionFailed, match="correlation id"):
            await connection.request(REQUEST)
        assert not connection.connected
        assert (await connection.request(REQUEST)).error_code == ErrorCode.none

    peer = asyncio.run(with_peer(lambda n, cid: answer(cid + 1 if n == 0 else cid), test))
    assert peer.connections == 2


def test_garbage_fails_the_request():
    async def test(connection):
        with pytest.raises(ConnectionFailed, match="protocol error"):
            await connection.request(REQUEST)

    asyncio.run(with_peer(lambda n, cid: b"\x00\x00\x00\x06" + cid.to_bytes(4, "big") + b"\xff\xff", test))


def test_a_silent_peer_times_out_and_a_late_answer_is_never_mistaken_for_a_new_one():
    async def test(connection):
        start = time.monotonic()
        with pytest.raises(ConnectionFailed, match="timed out"):
            await connection.request(REQUEST)
        assert 0.45 <= time.monotonic() - start < 2
        assert (await connection.request(REQUEST)).error_code == ErrorCode.none

    peer = asyncio.run(with_peer(lambda n, cid: b"" if n == 0 else answer(cid), test))
    assert peer.connections == 2  # the timed-out connection was not reused


def test_a_cancelled_request_leaves_the_connection_in_step():
    held = []

    def answer_both_after_the_second(n, cid):
        held.append(cid)
        return b"" if n == 0 else answer(held[0]) + answer(cid, ErrorCode.unsupported_version)

    async def test(connection):
        first = asyncio.create_task(connection.request(REQUEST))
        while not connection._waiting:  # sent, its answer held back
            await asyncio.sleep(0.01)
        first.cancel()
        assert (await connection.request(REQUEST)).error_code == ErrorCode.unsupported_version

    peer = asyncio.run(with_peer(answer_both_after_the_second, test))
    assert peer.connections == 1


def test_reconnect_attempts_back_off_exponentially_up_to_the_maximum():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def run_queue_wait_s() -> float:
        """Time this thread spent runnable but without a CPU (schedstat, ns): on a loaded
        machine a gap grows by it, which says nothing of the backoff."""
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9

    async def attempts():
        connection = BrokerConnection("127.0.0.1", port, "t", reconnect_backoff_ms=50, reconnect_backoff_max_ms=200)
        marks = []
        for _ in range(5):
            with pytest.raises(ConnectionFailed, match="cannot connect"):
                await connection.request(REQUEST)
            marks.append((time.monotonic(), run_queue_wait_s()))
        return [(b - a, (b - a) - (wb - wa)) for (a, wa), (b, wb) in zip(marks, marks[1:])]

    gaps = asyncio.run(attempts())
    for (gap, own_gap), expected in zip(gaps, [0.05, 0.1, 0.2, 0.2]):
        assert expected * 0.9 <= gap and own_gap < expected + 0.15, (gap, own_gap, expected)
