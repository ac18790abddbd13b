"""The record check of a Produce request's batches, on the event loop or in a worker thread.

Every batch a producer sends is read record by record before it is appended
(wire/record_validation.py, as Kafka's LogValidator). An uncompressed batch costs what its
bytes cost the network and the CRC, so it is checked at once. A compressed one costs what it
inflates to, which a few bytes can push to the limit (a 2 KB zstd batch can claim 60 MB; a
40 KB request of 20 of them stalled the commitlog broker 5.3 s while its key walk inflated
them). So the loop inflates at most INLINE_UNCOMPRESSED_BYTES per request; a batch that would
take it past that is checked, with the full limit, in one worker thread per request
(asyncio.to_thread), and the request's appends wait for it. Appends still happen in request
order, and the dispatcher awaits one request before the next of the same connection, so a
producer's batches to a partition keep their order.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from wire.record_batch import BatchHeader, InvalidBatch, InvalidRecord
from wire.record_validation import CheckedRecords, RecordsTooLarge, check_records

# About a millisecond of inflating and walking; a producer's compressed batch rarely needs more.
INLINE_UNCOMPRESSED_BYTES = 1 << 20


@dataclass(slots=True)
class PendingBatch:
    """One partition's batch that passed validate_produced, waiting for its record check."""

    records: bytes
    header: BatchHeader
    want_keys: bool
    keys: set[bytes] | None = None
    error: tuple[str, str] | None = None  # (Kafka error name, message) when the check failed


def _check(pending: PendingBatch, limit: int | None = None) -> int:
    """Run the record check on `pending`, storing its keys or its error; returns the bytes it
    inflated. RecordsTooLarge escapes when a `limit` was given (the caller retries in a thread)."""
    try:
        if limit is None:
            checked: CheckedRecords = check_records(pending.records, pending.header, pending.want_keys)
        else:
            checked = check_records(pending.records, pending.header, pending.want_keys, limit)
    except RecordsTooLarge as exc:
        if limit is not None:
            raise
        pending.error = ("message_too_large", str(exc))
        return 0
    except InvalidRecord as exc:
        pending.error = ("invalid_record", str(exc))
        return 0
    except InvalidBatch as exc:
        pending.error = ("corrupt_message", str(exc))
        return 0
    pending.keys = checked.keys
    return checked.uncompressed_bytes


def _check_in_thread(batches: list[PendingBatch]) -> None:
    for pending in batches:
        _check(pending)


async def check_batches(batches: list[PendingBatch]) -> None:
    """Check every batch of one request; each ends with its keys or its error set."""
    budget = INLINE_UNCOMPRESSED_BYTES
    deferred = []
    for pending in batches:
        if pending.header.compression == 0:
            _check(pending)
            continue
        if budget <= 0:
            deferred.append(pending)
            continue
        try:
            budget -= _check(pending, budget)
        except RecordsTooLarge:
            budget = 0  # what the loop inflated for this one is wasted: nothing more inline
            deferred.append(pending)
    if deferred:
        await asyncio.to_thread(_check_in_thread, deferred)
