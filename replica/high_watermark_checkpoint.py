"""Kafka's `replication-offset-checkpoint`: each hosted partition's high watermark, on disk.

    0                        version
    2                        entries
    orders 0 1200            topic partition high-watermark
    orders 1 977

(segment/offset_checkpoint.py's format, one file in the broker's data directory, rewritten
whole: temp file, fsync, rename, fsync of the directory.) The replica manager writes it every
replica.high.watermark.checkpoint.interval.ms (5000, Kafka's default) and at shutdown.

Why: a restarted broker otherwise starts every partition's HW at 0, so as a leader it would
answer consumers nothing, and ListOffsets(latest) 0, until its followers fetch again. The HW
read back is one the partition had before the restart — every record below it was on every
ISR member then — so it is safe to start from, clamped to the log as recovered (the tail may be
shorter after a crash). After a crash the file is the previous or the new version, both lower
bounds of what was committed; a missing or unreadable file means starting from 0, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from segment.offset_checkpoint import read_checkpoint, write_checkpoint

from .leader_endpoint import TopicPartition

FILE_NAME = "replication-offset-checkpoint"
CHECKPOINT_INTERVAL_MS = 5000  # Kafka's replica.high.watermark.checkpoint.interval.ms


class HighWatermarkCheckpoint:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def in_dir(cls, data_dir: Path | str) -> "HighWatermarkCheckpoint":
        return cls(Path(data_dir) / FILE_NAME)

    def read(self) -> dict[TopicPartition, int]:
        return {TopicPartition(t, p): hw for (t, p), hw in read_checkpoint(self.path).items()}

    def write(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        write_checkpoint(self.path, {(tp.topic, tp.partition): hw for tp, hw in high_watermarks.items()})
