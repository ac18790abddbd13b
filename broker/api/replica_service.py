"""What the data-path handlers (Produce, Fetch, the log dirs') call on this broker's replicas
beyond the topic lookups (topic_lookup.py): Kafka's ReplicaManager as KafkaApis sees it.

One class answers it (broker/local_replicas.py), routing each call to what does the work: the
write path (replica/write_path.py), the followers' fetch sessions (broker/fetch_sessions.py),
the coordinator's check of a transaction's partitions (broker/txn/partition_verifier.py), the
consumers' quotas (broker/quotas/), the moves between log dirs (broker/storage/log_dir_move.py).
Every call is made once per request, never per record or partition.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, Sequence

from replica.future_replica import FutureReplica
from replica.write_path import PendingWrites, RecordsWrite
from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader

from broker.fetch_sessions import FetchContext, PartitionKey
from broker.topic import Topic

TopicPartition = tuple[str, int]


class ReplicaService(Protocol):
    async def append(self, writes: Sequence[RecordsWrite], acks: int) -> PendingWrites:
        """Appends each batch as its partition's leader, now and in order (the one write path);
        the fsyncs and the acks=all wait are the result's to complete."""

    def fetch_context(self, request: Any, replica_id: int, requested: dict[PartitionKey, object],
                      forgotten: list[PartitionKey]) -> FetchContext | ErrorCode:
        """The Fetch's session context (a follower's incremental session, a consumer's none), or
        the session error that answers it."""

    def consumer_fetch_limit(self, header: RequestHeader) -> int | None:
        """The most a consumer's fetch may read under its consumer_byte_rate, None without one."""

    def consumer_fetch_throttle(self, header: RequestHeader, response_bytes: int) -> int:
        """A consumer's fetch of `response_bytes` against its quotas: the throttle time (ms), 0
        to answer it; the connection is muted for it."""

    def log_dirs(self) -> dict[str, Path]:
        """This broker's log dirs, storage mode -> absolute path."""

    def cordoned_log_dirs(self) -> set[str]:
        """The storage modes whose log dir the dynamic cordoned.log.dirs names (KIP-1066)."""

    def log_dir_mode(self, path: str) -> str | None:
        """The storage mode whose log dir is `path` (absolute), or None."""

    def future_replica(self, topic: str, index: int) -> FutureReplica | None:
        """The replica a log dir move is filling, once its log exists."""

    def move_replica(self, topic: Topic, index: int, mode: str) -> None:
        """Start moving the partition hosted here into `mode`'s log dir (nothing if it is there)."""
