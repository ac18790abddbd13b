"""AnswerWriter (broker/net/answer_writer.py): answers the caller says are followed by another
(`more`) are held and leave in one write with it, in order, before any answer written after
them; a lone answer leaves at once."""

from __future__ import annotations

import asyncio

from broker.net import answer_writer
from broker.net.answer_writer import AnswerWriter
from broker.tests.answer_transport import Transport, run


def writer() -> tuple[AnswerWriter, Transport]:
    transport = Transport()
    out = AnswerWriter(tls=False, wrote=lambda: None)
    out.connected(transport)  # type: ignore[arg-type]
    return out, transport


def test_a_lone_answer_is_written_at_once():
    async def scenario():
        out, transport = writer()
        assert out.write_now([b"alone"], more=False)
        assert transport.written == [b"alone"]

    run(scenario())


def test_answers_followed_by_others_leave_with_the_last_in_one_write():
    async def scenario():
        out, transport = writer()
        assert out.write_now([b"one"], more=True) and out.write_now([b"two", b"+"], more=True)
        assert transport.written == []  # held: more follow
        assert out.write_now([b"three"], more=False)
        assert transport.written == [b"onetwo+three"]

    run(scenario())


def test_held_answers_leave_when_the_loop_comes_round_if_the_next_never_came():
    async def scenario():
        out, transport = writer()
        assert out.write_now([b"one"], more=True)
        await asyncio.sleep(0)  # the caller suspended: the loop's pass writes what it held
        assert transport.written == [b"one"]

    run(scenario())


def test_an_answer_that_goes_through_send_leaves_after_the_held_ones():
    async def scenario():
        out, transport = writer()
        assert out.write_now([b"held"], more=True)
        out.pause()  # the transport's buffer is full: the next answer must wait in send
        assert not out.write_now([b"next"], more=False)
        sending = asyncio.ensure_future(out.send([b"next"]))
        await asyncio.sleep(0)
        out.resume()
        await sending
        assert b"".join(transport.written) == b"heldnext" and transport.written[0] == b"held"

    run(scenario())


def test_close_writes_the_held_answers_first():
    async def scenario():
        out, transport = writer()
        assert out.write_now([b"authentication failed"], more=True)
        out.close()
        assert transport.written == [b"authentication failed"] and transport.closing
        await asyncio.sleep(0)  # the scheduled flush finds nothing left

    run(scenario())


def test_an_answer_is_not_held_past_hold_max_or_write_batch(monkeypatch):
    async def scenario():
        out, transport = writer()
        monkeypatch.setattr(answer_writer, "HOLD_MAX_S", 0.0)
        assert out.write_now([b"a"], more=True) and out.write_now([b"b"], more=True)
        assert transport.written == [b"a", b"b"]  # each held for no time at all
        monkeypatch.setattr(answer_writer, "HOLD_MAX_S", 60.0)
        monkeypatch.setattr(answer_writer, "WRITE_BATCH", 4)
        assert out.write_now([b"cc"], more=True) and out.write_now([b"dd"], more=True)
        assert transport.written == [b"a", b"b", b"ccdd"]  # 4 bytes held: written at once

    run(scenario())


def test_held_answers_for_a_peer_that_left_are_dropped():
    async def scenario():
        out, transport = writer()
        assert out.write_now([b"late"], more=True)
        transport.closing = True
        await asyncio.sleep(0)
        assert transport.written == []

    run(scenario())
