"""Kafka's flush.messages = N: fsync a partition's log once N messages were appended to it
since its last fsync (Kafka's UnifiedLog.append: `if (unflushedMessages >= flushInterval) flush()`).

N = 1 fsyncs every produce before it is acknowledged; N = 10000 fsyncs about once per 10,000
messages, and the produce that crosses the count waits for that fsync (group commit, so the
requests pipelined behind it share it) before it is acknowledged, as in Kafka, where the flush
runs inside the append. The messages in between are acknowledged from the page cache: up to
N - 1 of them may be lost in a power cut, which is what the setting trades. N = 0 (our
default, Kafka's is Long.MAX_VALUE) never fsyncs on count.

The count restarts when an fsync is decided, not when it ends: that fsync covers everything
appended before it starts (group_commit.py), so messages appended meanwhile count towards the
next one.
"""

from __future__ import annotations


class FlushByCount:
    def __init__(self) -> None:
        self._unflushed: dict[int, int] = {}  # id(Partition) -> messages since the last fsync was decided

    def appended(self, partition, messages: int) -> bool:
        """Count `messages` just appended to `partition`; True when they bring it to its
        flush.messages, so the caller must fsync (and wait) before acknowledging them."""
        every = partition.config.flush_messages
        if every <= 0:
            return False
        count = self._unflushed.get(id(partition), 0) + messages
        if count >= every:
            self._unflushed[id(partition)] = 0
            return True
        self._unflushed[id(partition)] = count
        return False
