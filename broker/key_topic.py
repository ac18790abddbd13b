"""Key-lookup topics: the commitlog engine's key index, readable by any Kafka client.

    __key.<topic>.<key as unpadded base64url>

names a read-only virtual topic. It has the partitions of <topic> (at least one of them held
here in the commitlog layout, the one with a key index: a partition in the segment layout, moved
there by AlterReplicaLogDirs or held so by this cluster member, answers UNKNOWN_TOPIC_OR_PARTITION
rather than what the commitlog still holds of it); partition p serves, from <topic>'s
partition p, exactly the records whose key equals <key>, at their real offsets, timestamps
and headers. A consumer assigns it (kafka-python, confluent-kafka, kcat -C, Java), seeks to
the beginning and reads: it sees only the matching records, with gaps in the offsets as in a
compacted topic. ListOffsets and the high watermark are those of <topic>.

    topic "orders", key b"customer-42"  ->  __key.orders.Y3VzdG9tZXItNDI

How it is served: the index gives candidate commitlog units (checked against the real key,
segment/rocket/key_lookup.py); each matching record is sent as a batch of its own, built
here (uncompressed, CRC32C computed, baseOffset = the record's offset). This is the one place
the broker encodes records a producer wrote: like Kafka's log cleaner, a lookup has to drop
the other records of a batch, which no header rewrite can do.

Limits: the name is at most 249 characters like any topic name (a longer one names no topic:
INVALID_TOPIC_EXCEPTION in Metadata), so topic and encoded key share ~240; a key is
bytes, so a null key cannot be looked up; produce, delete-records and create-partitions on
the name are refused; the topic is not listed in an all-topics Metadata request (it is
answered when named, with its source's partition count: clients that only read all-topics
metadata, like kafka-python's partitions_for_topic, assign its partitions by number) and is
never auto-created. Each fetch walks the index chain of the key:
made for lookups, not for streaming a hot key.

Its topic id is a hash of its name, so an id alone cannot name it, yet Fetch v13+ names topics
by id only. A broker remembers the last NAMES_BY_ID key topics it was asked for by name
(KeyTopicIds); a client learns the id from Metadata by name, and a forgotten id (a restart, or
a cluster member only ever asked by id) is UNKNOWN_TOPIC_ID, on which clients ask Metadata again.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections import OrderedDict

from replica.producer_state import ActiveProducer
from replica.readable_partition import FetchIsolation
from segment.log import OffsetOutOfRange
from segment.rocket.key_lookup import lookup_key
from wire.batch_builder import build_record_batch
from wire.error_codes import ErrorCode

PREFIX = "__key."
_NAMESPACE = uuid.UUID("6f2a1c8e-4b1d-4d6b-9a55-0d7f4c1e2b3a")
NAMES_BY_ID = 4096  # at most 249 characters each: about 2 MB


def name_for(topic: str, key: bytes) -> str:
    return PREFIX + topic + "." + base64.urlsafe_b64encode(key).decode().rstrip("=")


def parse(name: str) -> tuple[str, bytes] | None:
    """(topic, key) for a key-lookup name, None for any other name.

    Only the one name name_for gives a key is read as that key: Python's base64 decoder skips
    characters outside the alphabet (`!!!!` would decode to the empty key) and ignores the
    unused low bits of the last character (`YR` would decode to b"a", like `YQ`).
    """
    if not name.startswith(PREFIX) or "." not in name[len(PREFIX):]:
        return None
    topic, encoded = name[len(PREFIX):].rsplit(".", 1)
    try:
        key = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):
        return None
    return (topic, key) if topic and encoded and name_for(topic, key) == name else None


def topic_id_for(name: str) -> uuid.UUID:
    """Stable across restarts and brokers: clients caching topic ids see the same one."""
    return uuid.uuid5(_NAMESPACE, name)


class KeyTopicIds:
    """The names of the key topics last served by name, by their ids, the least recently
    served forgotten first."""

    def __init__(self, capacity: int = NAMES_BY_ID) -> None:
        self._capacity = capacity
        self._names: OrderedDict[uuid.UUID, str] = OrderedDict()

    def served(self, name: str, topic_id: uuid.UUID) -> None:
        self._names[topic_id] = name
        self._names.move_to_end(topic_id)
        if len(self._names) > self._capacity:
            self._names.popitem(last=False)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return self._names.get(topic_id)


class KeyPartition:
    """One key's view of a source partition (replica.readable_partition.ReadablePartition):
    read-only; its offsets, high watermark, epochs and waiters are the source's."""

    read_only = True

    def __init__(self, store, topic: str, key: bytes, source) -> None:
        self.topic, self.index = topic, source.index
        self._store, self._key, self._source = store, key, source

    @property
    def leader_epoch(self) -> int:
        return self._source.leader_epoch

    @property
    def high_watermark(self) -> int:
        return self._source.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self._source.last_stable_offset

    def aborted_transactions(self, start: int, upper: int) -> list:
        """None to name: the records a view serves are rebuilt without their producer ids."""
        return []

    @property
    def log_start_offset(self) -> int:
        return self._source.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._source.log_end_offset

    @property
    def is_leader(self) -> bool:
        return self._source.is_leader

    def epoch_error(self, current_leader_epoch: int) -> ErrorCode | None:
        return self._source.epoch_error(current_leader_epoch)

    def read(self, offset: int, max_bytes: int, isolation: FetchIsolation) -> list[bytes]:
        """One batch per matching record at or after `offset`, each spanning up to the next match
        (the last one up to what `isolation` may read of the source), so a consumer's position
        reaches the high watermark as it does in a compacted topic; with no match left, one
        empty batch spans the rest."""
        if not self.log_start_offset <= offset <= self.log_end_offset:
            raise OffsetOutOfRange(f"offset {offset} outside [{self.log_start_offset}, {self.log_end_offset}]")
        upper_bound = self._source.last_fetchable_offset(isolation)
        if offset >= upper_bound:
            return []
        hits = [h for h in lookup_key(self._store, self.topic, self._key, self.index)
                if offset <= h.offset < upper_bound]
        if not hits:
            return [bytes(build_record_batch(offset, upper_bound - 1, []))]
        out, size = [], 0
        if hits[0].offset > offset:  # skip the gap before the first match
            out.append(bytes(build_record_batch(offset, hits[0].offset - 1, [])))
        for hit, nxt in zip(hits, hits[1:] + [None]):
            last = (nxt.offset if nxt else upper_bound) - 1
            record = (hit.offset, hit.timestamp, hit.key, hit.value, hit.headers)
            batch = bytes(build_record_batch(hit.offset, last, [record]))
            if out and size + len(batch) > max_bytes:
                break
            out.append(batch)
            size += len(batch)
        return out

    def fetch_offset_for_timestamp(self, timestamp: int, isolation: FetchIsolation) -> tuple[int, int] | None:
        return self._source.fetch_offset_for_timestamp(timestamp, isolation)

    def follower_fetched(self, replica_id: int, fetch_offset: int) -> None:
        """Followers replicate the source topic, never a key's view of it."""

    def add_waiter(self, fut, reads_to_log_end: bool = False) -> None:
        self._source.add_waiter(fut, reads_to_log_end)

    def discard_waiter(self, fut) -> None:
        self._source.discard_waiter(fut)

    def active_producers(self) -> list[ActiveProducer]:
        """None: a key's view writes nothing; its source's producers are the source's."""
        return []
