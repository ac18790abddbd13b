"""What the answer tests share: the part of an asyncio transport AnswerWriter uses, recording
each write, and a runner with a deadline."""

from __future__ import annotations

import asyncio


class Transport:
    """What AnswerWriter uses of an asyncio transport: write, close and is_closing."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closing = False

    def write(self, data) -> None:
        assert not self.closing, "written after close"
        self.written.append(bytes(data))

    def close(self) -> None:
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 5))
