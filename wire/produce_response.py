"""ProduceResponse v3-v13 written straight to bytes, not through kio's generic entity writer, for
an answer that names no leader (KIP-951's tagged fields, which only a NOT_LEADER_OR_FOLLOWER-like
error carries from v10 on). The produce handler writes every other answer this way, refusals
too: the body carries its refused partitions for the metrics (`ProduceBody.failed`, as
follower_fetch_response.py's body does for Fetch).

Why: every Produce is answered, and at small requests the answer was a large part of the cost:
building one kio entity per partition and walking it took 22-27 µs for a one-partition answer,
framed, against 4.5-4.7 µs here; a transaction over 64 partitions sends a Produce per partition (py-spy of
that load: encode_response 7.7 % of the broker's samples). wire/tests/test_produce_response.py
holds the bytes equal to kio's for every version, so kio's schema stays the reference.

Byte layout (Kafka's ProduceResponse.json; the version a field appears from in brackets):

    responses  array of     name string ([v13+] topic_id uuid, 16 bytes, instead),
                            partition_responses array of
                                index int32, error_code int16, base_offset int64,
                                log_append_time_ms int64 (-1: CreateTime),
                                [v5+] log_start_offset int64,
                                [v8+] record_errors array of
                                          batch_index int32, batch_index_error_message nullable string,
                                [v8+] error_message nullable string
    throttle_time_ms   int32

Flexible versions (v9+): arrays and strings are "compact" (length + 1 as an unsigned varint, 0
for null), and every struct, the response included, ends with its tagged fields: none here
(current_leader and node_endpoints are left out, as kio leaves a tagged field at its default),
one 0x00 byte. Older versions: int32 array lengths and int16 string lengths (-1 for null).
"""

from __future__ import annotations

import struct
import uuid
from typing import NamedTuple, Sequence

from wire.body_writer import NO_TAGS, BodyWriter
from wire.error_codes import ErrorCode
from wire.protocol import EncodedBody

FLEXIBLE_FROM = 9
_PARTITION_V3 = struct.Struct(">ihqq")  # index, error_code, base_offset, log_append_time_ms
_PARTITION_V5 = struct.Struct(">ihqqq")  # ... log_start_offset
_BATCH_INDEX = struct.Struct(">i")
_THROTTLE = struct.Struct(">i")


class PartitionAnswer(NamedTuple):
    index: int
    error_code: int
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int
    record_errors: Sequence[tuple[int, str | None]]  # (batch index, message)
    error_message: str | None


class ProduceBody(EncodedBody):
    """The body, with what the metrics count of it (observability/metrics.py)."""

    __slots__ = ("failed",)

    def __init__(self, data: bytes, failed: list[tuple[str | None, int, ErrorCode]], throttle_at: int) -> None:
        super().__init__(data, [code for _, _, code in failed], throttle_at)
        self.failed = failed  # (topic name, partition, error) of each partition refused


def encode_produce_response(version: int, topics: Sequence[tuple[str | uuid.UUID, Sequence[PartitionAnswer]]],
                            failed: list[tuple[str | None, int, ErrorCode]]) -> ProduceBody:
    """`topics`: (name, or the topic id from v13 on; its partitions' answers) in answer order.
    `failed`: (topic name, partition, error) of each answer with an error, for the metrics."""
    w = BodyWriter(version >= FLEXIBLE_FROM)
    tags = NO_TAGS if w.flexible else b""
    partition = _PARTITION_V5 if version >= 5 else _PARTITION_V3
    out = [w.length(len(topics))]
    for key, answers in topics:
        out.append(key.bytes if isinstance(key, uuid.UUID) else w.string(key))  # v13+ by id
        out.append(w.length(len(answers)))
        for a in answers:
            out.append(partition.pack(a.index, a.error_code, a.base_offset, a.log_append_time_ms,
                                      a.log_start_offset) if version >= 5 else
                       partition.pack(a.index, a.error_code, a.base_offset, a.log_append_time_ms))
            if version >= 8:
                out.append(w.length(len(a.record_errors)))
                for batch_index, message in a.record_errors:
                    out += (_BATCH_INDEX.pack(batch_index), w.string(message), tags)
                out.append(w.string(a.error_message))
            out.append(tags)
        out.append(tags)
    throttle_at = sum(map(len, out))
    out += (_THROTTLE.pack(0), tags)
    return ProduceBody(b"".join(out), failed, throttle_at)
