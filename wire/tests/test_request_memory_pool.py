"""queued.max.request.bytes accounting: the pool alone, then the frame decoder reserving from it."""

import struct

import pytest

from hypothesis import given
from hypothesis import strategies as st

from wire.framing import FrameDecoder
from wire.request_memory_pool import UNBOUNDED, RequestMemoryPool


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_admits_while_anything_is_left_then_makes_others_wait():
    pool = RequestMemoryPool(100, always_admit=0)
    assert pool.try_reserve(60)
    assert pool.try_reserve(60)  # 40 were left: admitted, overshooting by less than one frame
    assert pool.available == -20
    assert not pool.try_reserve(1)


def test_small_frames_pass_a_spent_pool_and_are_still_counted():
    pool = RequestMemoryPool(100, always_admit=10)
    assert pool.try_reserve(150)
    assert pool.try_reserve(10)
    assert not pool.try_reserve(11)
    assert pool.available == -60


def test_waiters_are_granted_in_order_once_memory_is_back():
    pool = RequestMemoryPool(100, always_admit=0)
    granted = []
    assert pool.try_reserve(100)
    pool.wait(70, lambda: granted.append("a"))
    pool.wait(70, lambda: granted.append("b"))
    assert not pool.try_reserve(5)  # no jumping the queue, even with memory back later
    pool.release(50)
    assert granted == ["a"] and pool.available == -20
    pool.release(50)
    assert granted == ["a", "b"] and pool.available == -40
    pool.release(140)
    assert pool.available == 100 and pool.waiting == 0


def test_cancelled_waiter_is_never_granted():
    pool = RequestMemoryPool(10, always_admit=0)
    pool.try_reserve(10)
    calls = []

    def gone():
        calls.append(1)

    pool.wait(5, gone)
    pool.cancel(gone)
    pool.release(10)
    assert calls == [] and pool.available == 10


@pytest.mark.parametrize("capacity", [UNBOUNDED, 0, -7])
def test_no_positive_capacity_admits_everything(capacity):
    pool = RequestMemoryPool(capacity)
    assert all(pool.try_reserve(1 << 30) for _ in range(10))
    pool.release(1 << 30)
    assert pool.capacity == UNBOUNDED


def test_decoder_waits_holding_the_rest_of_the_chunk():
    pool = RequestMemoryPool(100, always_admit=0)
    first, second = FrameDecoder(pool=pool), FrameDecoder(pool=pool)
    assert first.feed(struct.pack(">i", 150) + b"a" * 50) == []  # admitted: 100 left
    assert second.feed(framed(b"b" * 60) + framed(b"c" * 3)) == []
    assert second.waiting_for == 60 and second.buffered == 67
    granted = []
    pool.wait(second.waiting_for, lambda: granted.append(second.granted()))
    got = first.feed(b"a" * 100)
    assert got == [b"a" * 150]
    pool.release(len(got[0]))  # the request was handled
    # 100 back: 60 granted to the waiting frame, and the 3-byte one behind it admitted from the 40 left
    assert granted == [[b"b" * 60, b"c" * 3]]
    assert second.waiting_for == 0 and pool.available == 37


def test_abandon_gives_back_a_half_received_frame():
    pool = RequestMemoryPool(1000, always_admit=0)
    decoder = FrameDecoder(pool=pool)
    decoder.feed(struct.pack(">i", 400) + b"x" * 10)
    assert pool.available == 600
    decoder.abandon()
    assert pool.available == 1000 and decoder.buffered == 0


def test_abandon_while_waiting_gives_back_nothing_it_did_not_get():
    pool = RequestMemoryPool(10, always_admit=0)
    pool.try_reserve(10)
    decoder = FrameDecoder(pool=pool)
    decoder.feed(struct.pack(">i", 400) + b"x")
    assert decoder.waiting_for == 400
    decoder.abandon()
    assert pool.available == 0


@given(
    st.lists(st.binary(max_size=300), max_size=10),
    st.lists(st.integers(1, 60), min_size=1),
    st.integers(1, 400),
    st.integers(0, 64),
)
def test_every_frame_arrives_and_every_byte_comes_back(payloads, cuts, capacity, always_admit):
    """Two connections share a pool; each request is handled (released) as soon as it is cut."""
    pool = RequestMemoryPool(capacity, always_admit=always_admit)
    stream = b"".join(framed(p) for p in payloads)
    decoders = [FrameDecoder(pool=pool), FrameDecoder(pool=pool)]
    got: list[list[bytes]] = [[], []]
    pending: list[bytes] = []

    def take(i: int, frames: list[bytes]) -> None:
        got[i].extend(frames)
        pending.extend(frames)
        if decoders[i].waiting_for:
            pool.wait(decoders[i].waiting_for, lambda: take(i, decoders[i].granted()))

    positions = [0, 0]
    step = 0
    while positions != [len(stream)] * 2 or pending:
        assert pending or not all(d.waiting_for or p == len(stream) for d, p in zip(decoders, positions))
        for i, decoder in enumerate(decoders):
            if decoder.waiting_for or positions[i] >= len(stream):
                continue
            cut = cuts[step % len(cuts)]
            step += 1
            take(i, decoder.feed(stream[positions[i] : positions[i] + cut]))
            positions[i] = min(positions[i] + cut, len(stream))
        if pending:
            pool.release(len(pending.pop(0)))
    assert got == [payloads, payloads]
    assert pool.available == capacity and pool.waiting == 0
