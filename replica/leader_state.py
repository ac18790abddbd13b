"""Leader-side replica bookkeeping: LEO per replica, the high watermark, the ISR.

Kafka's rules, kept as pure logic with an injected clock:
- the high watermark is the minimum log end offset over the in-sync replicas,
  and it never moves backwards;
- a follower that has not caught up to the leader's LEO for longer than
  replica.lag.time.max.ms leaves the ISR; one that reaches the HW rejoins;
- acks=all completes once the HW has passed the batch's last offset.

A single broker is its own only replica, so HW == LEO after every append.
The follower fetcher and etcd-backed leader election arrive with clusters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(slots=True)
class ReplicaProgress:
    log_end_offset: int = 0
    caught_up_ms: int = 0  # last time this replica's LEO reached the leader's LEO


class LeaderState:
    def __init__(
        self,
        local_id: int,
        replicas: list[int],
        leader_leo: int,
        clock_ms: Callable[[], int],
        lag_time_max_ms: int = 30_000,
    ) -> None:
        self.local_id = local_id
        self._clock = clock_ms
        self._lag_max = lag_time_max_ms
        now = clock_ms()
        self.replicas = {r: ReplicaProgress(leader_leo if r == local_id else 0, now) for r in replicas}
        self.isr = set(replicas) if len(replicas) == 1 else {local_id}
        self.high_watermark = leader_leo if self.isr == {local_id} else 0

    def leader_appended(self, leo: int) -> int:
        """The leader's LEO moved; returns the new high watermark."""
        me = self.replicas[self.local_id]
        me.log_end_offset = leo
        me.caught_up_ms = self._clock()
        return self._advance_hw()

    def follower_fetched(self, replica: int, fetch_offset: int) -> int:
        """A follower fetching at fetch_offset has everything below it."""
        progress = self.replicas[replica]
        progress.log_end_offset = fetch_offset
        leader_leo = self.replicas[self.local_id].log_end_offset
        if fetch_offset >= leader_leo:
            progress.caught_up_ms = self._clock()
        if replica not in self.isr and fetch_offset >= self.high_watermark:
            self.isr.add(replica)
        return self._advance_hw()

    def shrink_isr(self) -> set[int]:
        """Drop followers that lagged too long; returns who was removed."""
        now = self._clock()
        lagging = {
            r
            for r in self.isr
            if r != self.local_id and now - self.replicas[r].caught_up_ms > self._lag_max
        }
        self.isr -= lagging
        if lagging:
            self._advance_hw()
        return lagging

    def _advance_hw(self) -> int:
        candidate = min(self.replicas[r].log_end_offset for r in self.isr)
        if candidate > self.high_watermark:
            self.high_watermark = candidate
        return self.high_watermark

    def reset(self, leo: int) -> None:
        """After truncation or a log reset the HW can be at most the new LEO."""
        self.replicas[self.local_id].log_end_offset = leo
        self.high_watermark = min(self.high_watermark, leo)
