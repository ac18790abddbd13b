"""One partition's committed offset in a group, as OffsetCommit / TxnOffsetCommit store it
and `__consumer_offsets` records it (offsets_log.py); its own module because both the group and
the pending transactional offsets (pending_offsets.py) hold it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CommittedOffset:
    offset: int
    leader_epoch: int  # -1: unknown
    metadata: str
    commit_timestamp: int
    # Where its record sits in the group's __consumer_offsets partition: of a plain and a
    # transactional commit of one partition, the later record wins (pending_offsets.py).
    record_offset: int = -1
