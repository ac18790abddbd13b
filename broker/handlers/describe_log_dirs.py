"""DescribeLogDirs v1-v5: each log directory of this broker, the partitions in it and their sizes.

A storage layout is a log directory here: the segment layout keeps each partition's directory
in the data dir, the commitlog layout keeps its shared files under `<data-dir>/commitlog-store`.
A partition's size is its log's bytes (Kafka's UnifiedLog.size: the segments; in the commitlog
layout the bytes of its batches in the shared commitlog). Offset lag is Kafka's for a current
(not future) log: max(HW - LEO, 0). Asking for null topics means every partition; partitions
not hosted here are left out, as Kafka does. v4 adds the volume's total and usable bytes.
"""

from __future__ import annotations

import os
from pathlib import Path

from wire.protocol import response_for

from broker.storage.modes import ROCKET_DIR
from broker.security.acl.checks import cluster_allowed
from broker.security.acl.model import Operation
from broker.handlers.response_builder import NO_THROTTLE, error, make, nested


def _log_dir(data_dir: Path, storage_mode: str) -> Path:
    return data_dir / ROCKET_DIR if storage_mode == "commitlog" else data_dir


def _volume_bytes(path: Path) -> tuple[int, int]:
    try:
        st = os.statvfs(path)
    except OSError:
        return -1, -1
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def _wanted(request) -> dict[str, set[int]] | None:
    if request.topics is None:
        return None
    wanted: dict[str, set[int]] = {}
    for t in request.topics:
        wanted.setdefault(t.topic, set()).update(t.partitions)
    return wanted


async def handle(broker, header, request):
    cls = response_for(header)
    result_cls = nested(cls, "DescribeLogDirsResult")
    topic_cls = nested(cls, "DescribeLogDirsTopic")
    part_cls = nested(cls, "DescribeLogDirsPartition")
    if not cluster_allowed(broker, Operation.DESCRIBE):  # ACLs, as Kafka's handleDescribeLogDirsRequest
        return make(cls, throttle_time=NO_THROTTLE, error_code=error("cluster_authorization_failed"), results=())
    data_dir = Path(broker.config.data_dir).resolve()
    wanted = _wanted(request)
    by_dir: dict[Path, list] = {_log_dir(data_dir, "segment"): []}
    if "commitlog" in broker.storage.opened():
        by_dir[_log_dir(data_dir, "commitlog")] = []
    for name, topic in sorted(broker.topics.topics.items()):
        if wanted is not None and name not in wanted:
            continue
        partitions = tuple(
            make(part_cls, partition_index=p.index, partition_size=p.size_in_bytes,
                 offset_lag=max(p.high_watermark - p.log_end_offset, 0), is_future_key=False)
            for p in topic.partitions
            if p is not None and (wanted is None or p.index in wanted[name]))
        if partitions:
            by_dir.setdefault(_log_dir(data_dir, topic.storage_mode), []).append(
                make(topic_cls, name=name, partitions=partitions))
    results = []
    for path, topics in by_dir.items():
        total, usable = _volume_bytes(path)
        results.append(make(result_cls, error_code=error("none"), log_dir=str(path), topics=tuple(topics),
                            total_bytes=total, usable_bytes=usable, is_cordoned=False))
    return make(cls, throttle_time=NO_THROTTLE, error_code=error("none"), results=tuple(results))
