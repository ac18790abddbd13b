"""A leader's ISR changes, proposed one at a time to the controller store (Kafka's AlterPartition).

The leader adds a follower that caught up and drops the followers that lag (leader_state.py
decides which); a change takes effect only once the controller store accepts it. As Kafka's
pending ISR state: one proposal is in flight at a time (the next check proposes whatever is
still true by then), and after a refusal none is made for ISR_RETRY_BACKOFF_S, as Kafka waits
for the metadata the refusal said it lacked. Without a proposer (one broker, its own ISR)
nothing is proposed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable


ISR_RETRY_BACKOFF_S = 0.5

# (partition, the ISR it wants) -> the state the controller store accepted, None if refused.
# The partition and its state are passed through untouched, so they are not named here (naming
# them would tie this module and replica/partition.py into an import cycle).
IsrProposer = Callable[[object, list[int]], Awaitable[object]]


class PendingIsrChange:
    def __init__(self) -> None:
        self.proposer: IsrProposer | None = None  # set in a cluster: AlterPartition through etcd
        self._in_flight: asyncio.Task | None = None
        self._next_at = 0.0

    def propose(self, partition: object, new_isr: list[int],
                accepted: Callable[[object], None]) -> None:
        """Ask for `new_isr` unless a proposal is in flight or backing off; `accepted` gets the
        state the store took."""
        if self.proposer is None or (self._in_flight is not None and not self._in_flight.done()):
            return
        if time.monotonic() < self._next_at:
            return
        self._in_flight = asyncio.ensure_future(self._propose(partition, new_isr, accepted))

    async def _propose(self, partition: object, new_isr: list[int],
                       accepted: Callable[[object], None]) -> None:
        state = await self.proposer(partition, new_isr)
        if state is None:
            self._next_at = time.monotonic() + ISR_RETRY_BACKOFF_S
        else:
            accepted(state)
