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
        # (topic, index) -> messages since the last fsync was decided, while the partition is hosted here
        self._unflushed: dict[tuple[str, int], int] = {}

    def appended(self, partition, messages: int) -> bool:
        """Count `messages` just appended to `partition`; True when they bring it to its
        flush.messages, so the caller must fsync (and wait) before acknowledging them."""
        every = partition.config.flush_messages
        if every <= 0:
            return False
        key = (partition.topic, partition.index)
        count = self._unflushed.get(key, 0) + messages
        if count >= every:
            self._unflushed[key] = 0
            return True
        self._unflushed[key] = count
        return False

    def forget(self, partition) -> None:
        """The partition is no longer hosted here (a partition created again under its name
        counts from zero)."""
        self._unflushed.pop((partition.topic, partition.index), None)

    def __len__(self) -> int:
        return len(self._unflushed)
