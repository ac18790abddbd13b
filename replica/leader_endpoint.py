"""What a follower asks its leader, as a protocol, and the network implementation of it.

The fetcher (fetcher.py) runs against `LeaderEndpoint`, so its logic is tested with an
in-memory leader; `NetworkLeaderEndpoint` is the real one, Kafka's own inter-broker protocol
over one BrokerConnection: Fetch v12 with this broker's node id as replica_id (the leader then
reads up to its LEO and takes the fetch offset as this follower's LEO) and
OffsetForLeaderEpoch v4. Endpoints raise ConnectionError when the leader cannot be asked;
an error the leader answers for one partition comes back in that partition's result. Fetches
go in an incremental fetch session (fetch_session.py) when the leader grants one: a partition
that did not change is then UNCHANGED in the result.

Sizes and waits default to Kafka's broker settings for its replica fetchers:
replica.fetch.wait.max.ms 500, replica.fetch.min.bytes 1, replica.fetch.response.max.bytes
10 MiB, replica.fetch.max.bytes 1 MiB per partition, replica.socket.timeout.ms 30 s.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from wire.error_codes import ErrorCode
from wire.fetch_response_view import read_fetch_response_frame
from wire.inter_broker import (
    EpochRequest,
    FetchPartitionRequest,
    fetch_request,
    offset_for_leader_epoch_request,
    read_offset_for_leader_epoch_response,
)

from .broker_connection import BrokerConnection
from .fetch_session import SESSION_ERRORS, FollowerFetchSession, sessionless
from .sasl_login import SaslCredentials

log = logging.getLogger(__name__)

NO_EPOCH = -1  # Kafka's UNDEFINED_EPOCH
NO_OFFSET = -1  # Kafka's UNDEFINED_EPOCH_OFFSET


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class FetchPartition:
    tp: TopicPartition
    fetch_offset: int  # the follower's LEO
    current_leader_epoch: int  # fences a leader that is not (or not yet) in this epoch
    log_start_offset: int = -1  # the follower's


class EpochEndOffset(NamedTuple):
    """The leader's answer for one epoch: its largest epoch <= the one asked for and where
    that epoch ends in its log; NO_EPOCH / NO_OFFSET when it has none."""

    error: ErrorCode
    leader_epoch: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class FetchResult:
    error: ErrorCode
    high_watermark: int
    log_start_offset: int
    records: bytes | memoryview  # whole batches, possibly followed by the start of one more


# A partition the answer brought no news of: left out of an incremental answer (nothing
# changed), or the session failed (fetch_session.py). The fetcher leaves it as it is.
UNCHANGED = FetchResult(ErrorCode.none, -1, -1, b"")


class EpochQuery(NamedTuple):
    tp: TopicPartition
    current_leader_epoch: int
    leader_epoch: int  # the epoch whose end offset is asked for


class LeaderEndpoint(Protocol):
    async def fetch(self, partitions: list[FetchPartition]) -> dict[TopicPartition, FetchResult]: ...

    async def offset_for_leader_epoch(self, queries: list[EpochQuery]) -> dict[TopicPartition, EpochEndOffset]: ...

    async def close(self) -> None: ...


class NetworkLeaderEndpoint:
    """The leader at (host, port), asked by the follower broker `node_id`."""

    def __init__(self, host: str, port: int, node_id: int, *, max_wait_ms: int = 500, min_bytes: int = 1,
                 max_bytes: int = 10 * 1024 * 1024, partition_max_bytes: int = 1024 * 1024,
                 request_timeout_ms: int = 30_000, client_id: str | None = None,
                 login: SaslCredentials | None = None, tls=None) -> None:
        if request_timeout_ms <= max_wait_ms:
            # Kafka refuses the same combination: every long poll would time out.
            raise ValueError(f"request timeout {request_timeout_ms} ms must exceed the fetch wait {max_wait_ms} ms")
        self.node_id = node_id
        self._max_wait_ms = max_wait_ms
        self._min_bytes = min_bytes
        self._max_bytes = max_bytes
        self._partition_max_bytes = partition_max_bytes
        self.session = FollowerFetchSession()
        self._session_busy = False  # its request is out: another fetch goes outside it
        self.connection = BrokerConnection(host, port, client_id or f"broker-{node_id}-fetcher",
                                           request_timeout_ms=request_timeout_ms, login=login, tls=tls)

    async def fetch(self, partitions: list[FetchPartition]) -> dict[TopicPartition, FetchResult]:
        in_session = not self._session_busy
        asked = self.session.next_request(partitions) if in_session else sessionless(partitions)
        self._session_busy = True
        request = fetch_request(
            self.node_id, self._max_wait_ms, self._min_bytes, self._max_bytes, self._partition_max_bytes,
            isolation_level=0,
            partitions=[FetchPartitionRequest(p.tp.topic, p.tp.partition, p.current_leader_epoch, p.fetch_offset,
                                              p.log_start_offset) for p in asked.send],
            session_id=asked.session_id, session_epoch=asked.epoch, forgotten=asked.forgotten)
        try:
            top_error, session_id, answers = await self.connection.request(request, read_fetch_response_frame)
        except BaseException:  # failed or cancelled: the leader may have counted the request or not
            if in_session:
                self.session.failed()
            raise
        finally:
            if in_session:
                self._session_busy = False
        if in_session:
            self.session.answered(asked, top_error, session_id)
        if top_error in SESSION_ERRORS:  # nothing learned: the next round asks again, in full
            log.info("fetch session %d with %s:%d: %s; starting a new one", asked.session_id,
                     self.connection.host, self.connection.port, top_error.name)
            return dict.fromkeys((p.tp for p in partitions), UNCHANGED)
        results = {}
        for a in answers:
            error = a.error if top_error is ErrorCode.none else top_error
            results[TopicPartition(a.topic, a.partition)] = FetchResult(
                error, a.high_watermark, a.log_start_offset, a.records)
        if top_error is not ErrorCode.none:  # it applies to every partition asked
            for p in partitions:
                results.setdefault(p.tp, FetchResult(top_error, -1, -1, b""))
        elif asked.incremental:  # the leader leaves out what did not change
            for p in partitions:
                results.setdefault(p.tp, UNCHANGED)
        return results

    async def offset_for_leader_epoch(self, queries: list[EpochQuery]) -> dict[TopicPartition, EpochEndOffset]:
        request = offset_for_leader_epoch_request(
            self.node_id, [EpochRequest(q.tp.topic, q.tp.partition, q.current_leader_epoch, q.leader_epoch)
                           for q in queries])
        answers = read_offset_for_leader_epoch_response(await self.connection.request(request))
        return {TopicPartition(a.topic, a.partition): EpochEndOffset(a.error, a.leader_epoch, a.end_offset)
                for a in answers}

    async def close(self) -> None:
        await self.connection.close()
