"""Leader-side replica bookkeeping: LEO per replica, the high watermark, the ISR.

Kafka's rules, kept as pure logic with an injected clock:
- the high watermark is the minimum log end offset over the in-sync replicas,
  and it never moves backwards;
- a follower's LEO is the offset it fetches from (it holds everything below it);
- a follower that has not caught up to the leader's LEO for longer than
  replica.lag.time.max.ms is out of sync (`lagging`); one out of the ISR whose LEO
  reaches the HW and the start of the leader's epoch may rejoin (`may_join`);
- the ISR itself changes only when the controller store accepted the change
  (AlterPartition, a compare-and-swap in etcd): until then the HW is computed over
  the ISR as it was, which is the safe direction for both a shrink and an expansion.

A single broker is its own only replica, so HW == what the leader counts as its LEO.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

UNKNOWN = -1


@dataclass(slots=True)
class ReplicaProgress:
    log_end_offset: int = UNKNOWN
    caught_up_ms: int = 0  # last time this replica's LEO reached the leader's LEO


class LeaderState:
    def __init__(self, local_id: int, replicas: list[int], isr: list[int] | set[int], leader_leo: int,
                 high_watermark: int, clock_ms: Callable[[], int], lag_time_max_ms: int,
                 epoch_start_offset: int = 0) -> None:
        self.local_id = local_id
        self._clock = clock_ms
        self.lag_time_max_ms = lag_time_max_ms
        self.epoch_start_offset = epoch_start_offset  # a follower must reach it to rejoin
        now = clock_ms()
        # Followers start "caught up now": a new leader gives them a full lag time to fetch.
        self.replicas = {r: ReplicaProgress(leader_leo if r == local_id else UNKNOWN, now) for r in replicas}
        self.isr = set(isr) | {local_id}
        self.high_watermark = min(high_watermark, leader_leo)
        self._advance_hw()

    @property
    def leader_leo(self) -> int:
        return self.replicas[self.local_id].log_end_offset

    def leader_appended(self, leo: int) -> int:
        """The leader's LEO (what it counts as written: with fsync before ack, what an
        fsync covered) moved; returns the high watermark."""
        me = self.replicas[self.local_id]
        me.log_end_offset = leo
        me.caught_up_ms = self._clock()
        for r, progress in self.replicas.items():
            if r != self.local_id and progress.log_end_offset >= leo:
                progress.caught_up_ms = me.caught_up_ms
        return self._advance_hw()

    def follower_fetched(self, replica: int, fetch_offset: int) -> int:
        """A follower fetching at fetch_offset holds everything below it; returns the HW."""
        progress = self.replicas.get(replica)
        if progress is None:
            return self.high_watermark  # not a replica of this partition (stale metadata)
        progress.log_end_offset = min(fetch_offset, self.leader_leo)
        if fetch_offset >= self.leader_leo:
            progress.caught_up_ms = self._clock()
        return self._advance_hw()

    def may_join(self, replica: int) -> bool:
        """Out of the ISR but caught up to the HW and into this leader's epoch (Kafka's
        isFollowerInSync): the leader proposes adding it."""
        progress = self.replicas.get(replica)
        return (progress is not None and replica not in self.isr
                and progress.log_end_offset >= max(self.high_watermark, self.epoch_start_offset))

    def lagging(self) -> set[int]:
        """In-sync followers that have not caught up for longer than the lag time."""
        now = self._clock()
        return {r for r in self.isr
                if r != self.local_id and now - self.replicas[r].caught_up_ms > self.lag_time_max_ms}

    def set_isr(self, isr: list[int] | set[int]) -> int:
        """The controller store accepted a new ISR; returns the HW it allows."""
        self.isr = set(isr) | {self.local_id}
        return self._advance_hw()

    def _advance_hw(self) -> int:
        candidate = min(self.replicas[r].log_end_offset for r in self.isr if r in self.replicas)
        if candidate > self.high_watermark:
            self.high_watermark = candidate
        return self.high_watermark

    def reset(self, leo: int) -> None:
        """After truncation or a log reset the HW can be at most the new LEO."""
        self.replicas[self.local_id].log_end_offset = leo
        self.high_watermark = min(self.high_watermark, leo)
