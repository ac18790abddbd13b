"""One partition as the handlers see it: its log, its HW, its producers, its waiting fetches."""

from __future__ import annotations

import asyncio
import time

from replica.leader_state import LeaderState
from segment.log import AppendInfo, LogConfig, PartitionLog
from wire.record_batch import BatchHeader

from .producer_state import ProducerStateTable


def now_ms() -> int:
    return int(time.time() * 1000)


class Partition:
    def __init__(self, topic: str, index: int, log: PartitionLog, node_id: int, config: LogConfig) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.config = config
        self.leader_epoch = 0
        self.leader = LeaderState(node_id, [node_id], log.log_end_offset, now_ms)
        self.producers = ProducerStateTable()
        self._waiters: list[asyncio.Future] = []
        self._rebuild_producer_state()

    def _rebuild_producer_state(self) -> None:
        for header in self.log.batch_headers(self.log.log_start_offset):
            self.producers.record(header, header.base_offset, header.last_offset, header.max_timestamp)

    @property
    def high_watermark(self) -> int:
        return self.leader.high_watermark

    def append(self, batch: bytearray, header: BatchHeader) -> tuple[AppendInfo, bool]:
        """Append a validated producer batch; returns (info, was_duplicate).

        Raises ProducerFenced / OutOfOrderSequence before writing anything.
        """
        duplicate = self.producers.check(header)
        if duplicate is not None:
            info = AppendInfo(
                duplicate.first_offset, duplicate.last_offset, duplicate.timestamp, -1, self.log.log_start_offset
            )
            return info, True
        info = self.log.append(batch, self.leader_epoch, now_ms())
        self.producers.record(header, info.first_offset, info.last_offset, info.max_timestamp)
        return info, False

    def publish(self, upto: int | None = None) -> None:
        """Make appended data visible: advance the HW (to the log end, or to `upto`, the end
        an fsync covered) and wake waiting fetches."""
        end = self.log.log_end_offset
        self.leader.leader_appended(end if upto is None else min(upto, end))
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def add_waiter(self, fut: asyncio.Future) -> None:
        self._waiters.append(fut)

    def discard_waiter(self, fut: asyncio.Future) -> None:
        try:
            self._waiters.remove(fut)
        except ValueError:
            pass

    def wake_all(self) -> None:
        self.publish()
