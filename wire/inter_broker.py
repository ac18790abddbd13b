"""The two requests a follower sends its leader, as plain values in and out.

    Fetch v12 (API 1), the last version that names topics rather than topic ids (v13+,
    KIP-516, would need each partition's topic id in the fetcher): replica_id >= 0 asks the leader to read up to its log end
    offset (not the high watermark) and to count the fetch offset as this follower's LEO.
    In a fetch session (KIP-227, replica/fetch_session.py) when the leader grants one: a full
    request opens it (epoch 0), later ones name only what changed and what to forget.

    OffsetForLeaderEpoch v4 (API 23), the highest version kio has; v3+ carries replica_id,
    v4 is flexible. Per partition: current_leader_epoch (fencing, as in Fetch) and the epoch
    whose end offset the follower asks for.

The replica package builds its requests through here so the codec library stays inside wire/.
Error codes come back as ErrorCode members.
A Fetch response is read by fetch_response_view.py, in place.
"""

from __future__ import annotations

import datetime
import sys
from typing import Iterable, NamedTuple

from .error_codes import ErrorCode
from .protocol import request_class

FETCH_KEY = 1
FETCH_VERSION = 12
OFFSET_FOR_LEADER_EPOCH_KEY = 23
OFFSET_FOR_LEADER_EPOCH_VERSION = 4


class FetchPartitionRequest(NamedTuple):
    topic: str
    partition: int
    current_leader_epoch: int
    fetch_offset: int
    log_start_offset: int  # the follower's (Kafka sends it too)


class FetchPartitionResponse(NamedTuple):
    topic: str
    partition: int
    error: ErrorCode
    high_watermark: int
    log_start_offset: int
    records: bytes | memoryview  # fetch_response_view.py: a view of the received frame


class EpochRequest(NamedTuple):
    topic: str
    partition: int
    current_leader_epoch: int
    leader_epoch: int


class EpochResponse(NamedTuple):
    topic: str
    partition: int
    error: ErrorCode
    leader_epoch: int
    end_offset: int


def _nested(cls, name: str):
    return getattr(sys.modules[cls.__module__], name)


def fetch_request(replica_id: int, max_wait_ms: int, min_bytes: int, max_bytes: int,
                  partition_max_bytes: int, isolation_level: int,
                  partitions: Iterable[FetchPartitionRequest], session_id: int = 0, session_epoch: int = -1,
                  forgotten: Iterable[tuple[str, int]] = ()):
    """A Fetch v12 request entity for encode_request; partitions (and the (topic, partition)s
    the session forgets) are grouped by topic in the order their topics first appear. Without
    a session: session 0, epoch -1 (Kafka's FINAL_EPOCH), a full request."""
    cls = request_class(FETCH_KEY, FETCH_VERSION)
    topic_cls, part_cls = _nested(cls, "FetchTopic"), _nested(cls, "FetchPartition")
    forgotten_cls = _nested(cls, "ForgottenTopic")
    dropped: dict[str, list[int]] = {}
    for topic, partition in forgotten:
        dropped.setdefault(topic, []).append(partition)
    by_topic: dict[str, list] = {}
    for p in partitions:
        by_topic.setdefault(p.topic, []).append(part_cls(
            partition=p.partition, current_leader_epoch=p.current_leader_epoch, fetch_offset=p.fetch_offset,
            last_fetched_epoch=-1, log_start_offset=p.log_start_offset,
            partition_max_bytes=partition_max_bytes))
    return cls(
        cluster_id=None, replica_id=replica_id, max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=min_bytes, max_bytes=max_bytes, isolation_level=isolation_level, session_id=session_id,
        session_epoch=session_epoch,
        topics=tuple(topic_cls(topic=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
        forgotten_topics_data=tuple(forgotten_cls(topic=t, partitions=tuple(ps)) for t, ps in dropped.items()),
        rack_id="")


def offset_for_leader_epoch_request(replica_id: int, partitions: Iterable[EpochRequest]):
    """An OffsetForLeaderEpoch v4 request entity for encode_request."""
    cls = request_class(OFFSET_FOR_LEADER_EPOCH_KEY, OFFSET_FOR_LEADER_EPOCH_VERSION)
    topic_cls, part_cls = _nested(cls, "OffsetForLeaderTopic"), _nested(cls, "OffsetForLeaderPartition")
    by_topic: dict[str, list] = {}
    for p in partitions:
        by_topic.setdefault(p.topic, []).append(part_cls(
            partition=p.partition, current_leader_epoch=p.current_leader_epoch, leader_epoch=p.leader_epoch))
    return cls(replica_id=replica_id,
               topics=tuple(topic_cls(topic=t, partitions=tuple(ps)) for t, ps in by_topic.items()))


def read_offset_for_leader_epoch_response(response) -> list[EpochResponse]:
    return [EpochResponse(t.topic, p.partition, p.error_code, p.leader_epoch, p.end_offset)
            for t in response.topics for p in t.partitions]
