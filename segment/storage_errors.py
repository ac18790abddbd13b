"""The storage errors both engines raise; the broker maps each to a Kafka error code.

Kept apart from log.py (the interface) so the file helpers and the leader-epoch cache, which
log.py itself uses, can raise them without importing the interface.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base for errors the broker maps to Kafka error codes."""


class OffsetOutOfRange(StorageError):
    """Fetch offset below log start or above log end (OFFSET_OUT_OF_RANGE)."""


class OffsetMismatch(StorageError):
    """A replicated batch does not continue this log: its base offset is not the log end
    offset, or its leader epoch is below the latest epoch the log holds. Nothing is stored;
    the follower has to truncate (OffsetForLeaderEpoch) or re-fetch from its log end."""


class LogClosed(StorageError):
    """The partition was deleted or the store closed while a request used it."""


class WriteRefused(StorageError):
    """A write found no room (ENOSPC) or failed before anything was stored: the log is as it
    was, nothing of the batch is acknowledged (KAFKA_STORAGE_ERROR), and a later write may
    succeed once space is freed."""


class LogOffline(StorageError):
    """The log can no longer vouch for its tail: an fsync failed (the page cache may have
    dropped the bytes it held, so retrying would report data durable that is not) or a failed
    write could not be undone. Every append and read fails (KAFKA_STORAGE_ERROR) until a
    restart recovers the files to their last whole batch, as Kafka takes a log dir offline."""
