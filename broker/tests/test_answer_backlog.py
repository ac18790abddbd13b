"""AnswerBacklog (broker/net/answer_backlog.py): answers in request order, each written in the
pass of the event loop that made it ready, and a deferred answer made even when its client left."""

from __future__ import annotations

import asyncio

from broker.net import answer_backlog
from broker.net.answer_backlog import AnswerBacklog
from broker.net.answer_writer import AnswerWriter
from broker.tests.answer_transport import Transport, run


def backlog() -> tuple[AnswerBacklog, AnswerWriter, Transport, list[Exception]]:
    transport, failures = Transport(), []
    writer = AnswerWriter(tls=False, wrote=lambda: None)
    writer.connected(transport)  # type: ignore[arg-type]
    return AnswerBacklog(writer, failures.append), writer, transport, failures


async def made(fsynced: asyncio.Future, answer: bytes):
    await fsynced
    return [answer], 0.0


def test_a_deferred_answer_is_written_in_the_pass_that_makes_it_and_the_ones_behind_follow():
    async def scenario():
        answers, _, transport, failures = backlog()
        fsynced = asyncio.get_running_loop().create_future()
        await answers.add(made(fsynced, b"first"), None, 0.0)
        await answers.add([b"second"], None, 0.0)  # ready, but behind the first
        await asyncio.sleep(0)
        assert transport.written == [] and len(answers) == 2
        fsynced.set_result(None)
        await asyncio.sleep(0)  # one pass: the first's task ends, and writes both, in one write
        assert transport.written == [b"firstsecond"]
        assert len(answers) == 0 and failures == []
        await answers.emptied()

    run(scenario())


def test_an_answer_that_must_wait_for_the_transport_keeps_the_order():
    async def scenario():
        answers, writer, transport, _ = backlog()
        writer.pause()  # the transport's buffer is full
        await answers.add([b"first"], None, 0.0)
        await answers.add([b"second"], None, 0.0)
        await asyncio.sleep(0)
        assert transport.written == [b"first"]  # the task wrote it and waits for the drain
        writer.resume()
        await answers.emptied()
        assert transport.written == [b"first", b"second"]

    run(scenario())


def test_a_closed_backlog_writes_nothing_but_still_makes_the_deferred_answers():
    async def scenario():
        answers, _, transport, _ = backlog()
        fsynced = asyncio.get_running_loop().create_future()
        finished = []

        async def publishing():
            await fsynced
            finished.append("published")  # what a produce does after its fsync
            return [b"late"], 0.0

        await answers.add(publishing(), None, 0.0)
        answers.close()  # the client left
        fsynced.set_result(None)
        while not finished:
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert transport.written == []
        await answers.emptied()

    run(scenario())


def test_a_full_backlog_holds_the_next_answer_until_one_is_written(monkeypatch):
    monkeypatch.setattr(answer_backlog, "MAX_BACKLOG", 2)

    async def scenario():
        answers, _, transport, _ = backlog()
        fsynced = asyncio.get_running_loop().create_future()
        await answers.add(made(fsynced, b"a"), None, 0.0)
        await answers.add([b"b"], None, 0.0)
        third = asyncio.ensure_future(answers.add([b"c"], None, 0.0))
        await asyncio.sleep(0)
        assert not third.done()
        fsynced.set_result(None)
        await third
        await answers.emptied()
        assert b"".join(transport.written) == b"abc"

    run(scenario())


def test_a_failure_making_an_answer_closes_the_connection_once():
    async def scenario():
        answers, _, transport, failures = backlog()

        async def broken():
            raise RuntimeError("handler bug")

        await answers.add(broken(), None, 0.0)
        await answers.add([b"behind"], None, 0.0)
        await answers.emptied()
        assert [str(f) for f in failures] == ["handler bug"] and transport.written == []

    run(scenario())
