"""The coordinator's two periodic jobs, as Kafka schedules them in its TransactionCoordinator:

- every transaction.abort.timed.out.transaction.cleanup.interval.ms, fence and abort the
  transactions open longer than their producer's transaction.timeout.ms (an abandoned
  transaction would otherwise hold every read_committed consumer of its partitions at its first
  offset forever);
- every transaction.remove.expired.transaction.cleanup.interval.ms, forget the ids idle for
  transactional.id.expiration.ms (their producer ids are never used again).
"""

from __future__ import annotations

import asyncio
import logging

from broker.txn.coordinator import TransactionCoordinator

log = logging.getLogger(__name__)


async def abort_timed_out_loop(coordinator: TransactionCoordinator, interval_ms: int) -> None:
    while True:
        await asyncio.sleep(interval_ms / 1000)
        try:
            coordinator.abort_timed_out()
        except Exception:
            log.exception("aborting timed-out transactions failed")


async def expire_ids_loop(coordinator: TransactionCoordinator, interval_ms: int) -> None:
    while True:
        await asyncio.sleep(interval_ms / 1000)
        try:
            await coordinator.expire_ids()
        except Exception:
            log.exception("expiring transactional ids failed")
