"""FrameReceiver as a BufferedProtocol drives it: the socket writes up to len(buffer()) bytes,
however the stream happens to be cut, and the frames come out whole and in order."""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wire.frame_receiver import SCRATCH, FrameReceiver
from wire.framing import FrameTooLarge, PeerProtocolError


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def receive(receiver: FrameReceiver, stream: bytes, cuts: list[int]) -> list[bytes]:
    """Feed `stream` as reads of at most cuts[i] bytes each (and never more than the buffer)."""
    got, pos, i = [], 0, 0
    while pos < len(stream):
        buf = receiver.buffer()
        n = min(cuts[i % len(cuts)], len(buf), len(stream) - pos)
        buf[:n] = stream[pos : pos + n]
        got += [bytes(f) for f in receiver.received(n)]
        pos += n
        i += 1
    return got


# Sizes around the scratch buffer's edges: frames copied out of it, and frames read into their own.
SIZES = st.one_of(st.integers(0, 300), st.integers(SCRATCH - 8, SCRATCH + 8), st.integers(SCRATCH, 3 * SCRATCH))


@settings(max_examples=60, deadline=None)
@given(st.lists(SIZES, max_size=6), st.lists(st.integers(1, 2 * SCRATCH), min_size=1, max_size=5))
def test_frames_survive_any_split(sizes, cuts):
    pattern = bytes(range(251)) * (3 * SCRATCH // 251 + 2)
    payloads = [pattern[i : i + n] for i, n in enumerate(sizes)]  # each frame's bytes differ from its neighbours'
    assert receive(FrameReceiver(1 << 20), b"".join(map(framed, payloads)), cuts) == payloads


def test_a_large_frame_is_read_into_its_own_buffer_after_its_first_piece():
    payload = bytes(range(256)) * 1024  # 256 KiB
    receiver = FrameReceiver(1 << 20)
    first = receiver.buffer()
    first[:100] = framed(payload)[:100]
    assert receiver.received(100) == []
    rest = receiver.buffer()
    assert len(rest) == len(payload) - 96  # the frame's own buffer, less the 96 bytes already in
    rest[:] = payload[96:]
    (frame,) = receiver.received(len(rest))
    assert frame == payload


def test_oversize_and_negative_sizes_are_refused():
    receiver = FrameReceiver(1024)
    buf = receiver.buffer()
    buf[:4] = struct.pack(">i", 1025)
    with pytest.raises(FrameTooLarge):
        receiver.received(4)
    receiver = FrameReceiver(1024)
    buf = receiver.buffer()
    buf[:4] = struct.pack(">i", -1)
    with pytest.raises(PeerProtocolError):
        receiver.received(4)
