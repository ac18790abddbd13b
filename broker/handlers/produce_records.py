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

A topic whose compression.type names a codec other than the batch's has the batch rewritten in
it once checked (wire/recompression.py, Kafka's LogValidator), from the records the check
decompressed; that costs what the records inflate to, so such a batch takes the budget above
even when the producer sent it uncompressed. A rewritten batch larger than the topic's
max.message.bytes is refused as Kafka refuses it (MESSAGE_TOO_LARGE). cramjam holds the GIL
while it compresses too, so the worker thread does not spare the loop: per MB of records,
measured here, gzip costs ~25 ms, lz4 at its default level 9 ~20 ms, zstd ~4 ms, snappy ~1 ms
of event loop, once per batch the topic makes the broker rewrite.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from wire.error_codes import ErrorCode
from segment.log import LogConfig
from wire.record_batch import BatchHeader, InvalidBatch, InvalidRecord, parse_header
from wire.record_validation import CheckedRecords, RecordsTooLarge, check_records
from wire.record_walk import RecordSummary
from wire.recompression import recompress, target_codec

# About a millisecond of inflating and walking; a producer's compressed batch rarely needs more.
INLINE_UNCOMPRESSED_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Rewrite:
    codec: int
    level: int | None
    max_bytes: int  # the topic's max.message.bytes, which the rewritten batch must respect too
    partition: str  # "topic-index", for Kafka's message


@dataclass(slots=True)
class PendingBatch:
    """One partition's batch that passed validate_produced, waiting for its record check."""

    records: bytes | bytearray  # bytearray once rewritten in the topic's codec
    header: BatchHeader
    want_keys: bool
    walked: RecordSummary | None = None  # what the record check found: keys, timestamp range
    error: tuple[ErrorCode, str] | None = None  # (Kafka's error, message) when the check failed
    rewrite: Rewrite | None = None  # the codec the topic stores it in, when not the batch's


def rewrite_for(config: LogConfig, header: BatchHeader, topic: str, index: int) -> Rewrite | None:
    """How a batch must be rewritten for a topic's compression.type, or None to store it as sent
    (the common case, on every produce: it builds nothing)."""
    codec = target_codec(config.compression_type, header.compression)
    if codec is None:
        return None
    level = {1: config.compression_gzip_level, 3: config.compression_lz4_level,
             4: config.compression_zstd_level}.get(codec)
    return Rewrite(codec, level, config.max_message_bytes, f"{topic}-{index}")


def _rewrite(pending: PendingBatch, checked: CheckedRecords, rewrite: Rewrite) -> None:
    out = recompress(pending.records, pending.header, checked.records, rewrite.codec, rewrite.level)
    if len(out) > rewrite.max_bytes:  # Kafka's LogValidator, after recompressing
        pending.error = (ErrorCode.message_too_large, f"Message batch size is {len(out)} bytes in append to partition "
                         f"{rewrite.partition} which exceeds the maximum configured size of {rewrite.max_bytes}.")
        return
    pending.records, pending.header = out, parse_header(out)


def _check(pending: PendingBatch, limit: int | None = None) -> int:
    """Run the record check on `pending`, storing its walk (keys, timestamps) or its error, and rewrite it in the
    topic's codec if it asks for one; returns the bytes it inflated (or, rewritten, compressed).
    RecordsTooLarge escapes when a `limit` was given (the caller retries in a thread)."""
    try:
        if limit is None:
            checked: CheckedRecords = check_records(pending.records, pending.header, pending.want_keys)
        else:
            checked = check_records(pending.records, pending.header, pending.want_keys, limit)
    except RecordsTooLarge as exc:
        if limit is not None:
            raise
        pending.error = (ErrorCode.message_too_large, str(exc))
        return 0
    except InvalidRecord as exc:
        pending.error = (ErrorCode.invalid_record, str(exc))
        return 0
    except InvalidBatch as exc:
        pending.error = (ErrorCode.corrupt_message, str(exc))
        return 0
    pending.walked = checked.walked
    if pending.rewrite is None:
        return checked.uncompressed_bytes
    _rewrite(pending, checked, pending.rewrite)
    return len(checked.records)


def _check_in_thread(batches: list[PendingBatch]) -> None:
    for pending in batches:
        _check(pending)


async def check_batches(batches: list[PendingBatch]) -> None:
    """Check every batch of one request; each ends with its walk or its error set."""
    budget = INLINE_UNCOMPRESSED_BYTES
    deferred = []
    for pending in batches:
        if pending.header.compression == 0 and pending.rewrite is None:
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
