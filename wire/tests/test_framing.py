import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wire.framing import FrameDecoder, FrameTooLarge, PeerProtocolError


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@given(st.lists(st.binary(max_size=300), max_size=8), st.lists(st.integers(1, 50), min_size=1))
def test_frames_survive_any_split(payloads, cuts):
    stream = b"".join(framed(p) for p in payloads)
    decoder = FrameDecoder()
    got, pos, i = [], 0, 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        got += decoder.feed(stream[pos : pos + step])
        pos += step
        i += 1
    assert got == payloads
    assert decoder.buffered == 0


def test_oversize_frame_rejected_from_its_prefix():
    decoder = FrameDecoder(max_size=1024)
    with pytest.raises(FrameTooLarge):
        decoder.feed(struct.pack(">i", 1025))


def test_negative_size_rejected():
    with pytest.raises(PeerProtocolError):
        FrameDecoder().feed(struct.pack(">i", -5))


def test_limit_is_inclusive():
    assert FrameDecoder(max_size=4).feed(framed(b"abcd")) == [b"abcd"]
