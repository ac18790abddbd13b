"""DescribeLogDirs v1-v5: each log directory of this broker, the partitions in it and their sizes.

A storage layout is a log directory here: the segment layout keeps each partition's directory
in the data dir, the commitlog layout keeps its shared files under `<data-dir>/commitlog-store`.
Both are listed always, empty or not, as Kafka lists every dir of log.dirs: a user moving a
partition with AlterReplicaLogDirs reads the target's path here, before any topic uses it.
A partition's size is its log's bytes (Kafka's UnifiedLog.size: the segments; in the commitlog
layout the bytes of its batches in the shared commitlog). Each partition is listed under the
dir of the layout it is in, and a future replica (a move under way, log_dir_move.py) under its
target's, with is_future true. Offset lag is Kafka's: for a current log max(HW - LEO, 0), for a
future one how far it is behind the current log, max(current LEO - future LEO, 0). Asking for null topics means every partition; partitions
not hosted here are left out, as Kafka does. v4 adds the volume's total and usable bytes (of
the data dir's volume for the commitlog dir its engine has not made yet: it will be made there).
v5 adds is_cordoned (KIP-1066: a cordoned dir takes no new partitions): true for a dir this
broker's dynamic cordoned.log.dirs names (broker/settings/cordoned_log_dirs.py).
The answer is written straight to bytes (wire/describe_log_dirs_response.py): through kio, one
request for 10,000 partitions held the event loop 200-400 ms.
"""

from __future__ import annotations

import os
from pathlib import Path

from replica.partition import Partition
from wire.describe_log_dirs_response import LogDirEntry, PartitionEntry, TopicEntry, encode_describe_log_dirs_response
from wire.error_codes import ErrorCode
from wire.protocol import EncodedBody, RequestHeader, response_for

from broker.api.context import Answer, ApiContext, Request
from broker.security.acl.model import Operation
from broker.api.response_builder import NO_THROTTLE, make

NONE = int(ErrorCode.none)


def _volume_bytes(path: Path) -> tuple[int, int]:
    while not path.exists() and path.parent != path:
        path = path.parent
    try:
        st = os.statvfs(path)
    except OSError:
        return -1, -1
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def _wanted(request: Request) -> dict[str, set[int]] | None:
    if request.topics is None:
        return None
    wanted: dict[str, set[int]] = {}
    for t in request.topics:
        wanted.setdefault(t.topic, set()).update(t.partitions)
    return wanted


async def handle(ctx: ApiContext, header: RequestHeader, request: Request) -> Answer:
    if not ctx.authorizer.cluster_allowed(Operation.DESCRIBE):  # ACLs, as Kafka's handleDescribeLogDirsRequest
        return make(response_for(header), throttle_time=NO_THROTTLE, error_code=ErrorCode.cluster_authorization_failed,
                    results=())
    replicas = ctx.replicas
    dir_of = replicas.log_dirs()
    cordoned = {dir_of[m] for m in replicas.cordoned_log_dirs()}
    wanted = _wanted(request)
    by_dir: dict[Path, dict[str, list[PartitionEntry]]] = {path: {} for path in dir_of.values()}
    for name, topic in sorted(ctx.topics.topics.items()):
        if wanted is not None and name not in wanted:
            continue
        for p in topic.partitions:
            # None: hosted elsewhere (a hosted topic's partitions are logs, never read-only views)
            if not isinstance(p, Partition) or (wanted is not None and p.index not in wanted[name]):
                continue
            by_dir[dir_of[topic.mode_of(p.index)]].setdefault(name, []).append(
                (p.index, p.size_in_bytes, max(p.high_watermark - p.log_end_offset, 0), False))
            future = replicas.future_replica(name, p.index)
            if future is not None:
                by_dir[dir_of[future.target_mode]].setdefault(name, []).append(
                    (p.index, future.log.size_in_bytes, max(p.log_end_offset - future.log_end_offset, 0), True))
    results = [LogDirEntry(NONE, str(path), [TopicEntry(name, parts) for name, parts in topics.items()],
                           *_volume_bytes(path), path in cordoned)
               for path, topics in by_dir.items()]
    body = encode_describe_log_dirs_response(header.api_version, 0, NONE, results)
    return EncodedBody(body, [], 0)  # throttle_time_ms leads the body at every version
