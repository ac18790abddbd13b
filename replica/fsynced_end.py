"""How far a replica's log is known to be on disk: what it may count with flush.messages=1.

With flush.messages=1 a replica's offsets count only what it has fsynced, in both roles: a
follower reports a fetch offset only once an fsync covers it (the fetcher syncs first), and a
leader counts as its own LEO only what an fsync covered, also right after it takes over from a
follower's log whose tail was not fsynced yet. So the HW, min LEO over the ISR, counts only
what every ISR member has on disk, and acks=all survives a power cut that takes every replica
at once (Kafka's ISR counts page cache; KIP-966 is about that gap).

At open nothing is known: a process crash leaves unfsynced bytes in the page cache, and
recovery cannot tell them apart. An fsync covers the log below the end it read as it started,
unless the log was truncated meanwhile (the offsets it covered may hold other bytes now): each
truncation starts a generation, and an fsync begun in an older one counts nothing.
"""

from __future__ import annotations


class FsyncedEnd:
    def __init__(self, log_start_offset: int) -> None:
        self.end = log_start_offset  # below it the log is known fsynced
        self.generation = 0
        self.unflushed = 0  # messages appended since the last fsync was decided (flush.messages)

    def fsync_due(self, messages: int, flush_messages: int) -> bool:
        """Kafka's flush.messages = N (UnifiedLog.append: `if (unflushedMessages >= flushInterval)
        flush()`): count `messages` just appended; True once N have been since the last fsync
        was decided, which must then cover them before they count. N <= 0 never fsyncs on count.
        The count restarts when an fsync is decided, not when it ends: that fsync covers what
        was appended before it starts (group_commit.py), so later messages count towards the next."""
        if flush_messages <= 0:
            return False
        self.unflushed += messages
        if self.unflushed < flush_messages:
            return False
        self.unflushed = 0
        return True

    def covered(self, upto: int, log_end_offset: int) -> None:
        """An fsync of the current generation covered the log below `upto`."""
        self.end = max(self.end, min(upto, log_end_offset))

    def flushed(self, upto: int, generation: int, log_end_offset: int) -> None:
        """An fsync begun in `generation` covered the log below `upto`."""
        if generation == self.generation:
            self.covered(upto, log_end_offset)

    def truncated(self, log_end_offset: int) -> None:
        self.generation += 1
        self.end = min(self.end, log_end_offset)

    def emptied_at(self, offset: int) -> None:
        """The log was emptied to start at `offset`; the engines make the new start durable."""
        self.generation += 1
        self.end = offset

    def counted_end(self, high_watermark: int, log_end_offset: int) -> int:
        """The LEO a new leader counts as its own: what is fsynced (the tail above it counts
        once an fsync covers it), but never less than the HW it had, which every ISR member
        reported fsynced."""
        return max(min(self.end, log_end_offset), min(high_watermark, log_end_offset))
