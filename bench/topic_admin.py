"""Topic set-up and record counts shared by the benchmark scripts (confluent-kafka's admin client).

held_records trusts the high watermarks, which twinlog keeps by Kafka's rules; a peer that
does not (Tansu, see offset_check.py) is counted with offset_check.partition_ends instead.
"""

from __future__ import annotations

import time

from load_workers import PhaseError


def create_topic(bootstrap: str, topic: str, partitions: int, configs: dict[str, str] | None = None,
                 timeout_s: float = 60.0) -> None:
    """Create `topic` and wait until metadata shows a leader for every partition."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, 1, config=dict(configs or {}))
    for f in admin.create_topics([new], request_timeout=timeout_s).values():
        f.result(timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md and len(md.partitions) == partitions and all(p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.2)
    raise PhaseError(f"{topic} never showed {partitions} partitions with leaders")


def check_acknowledged(res: dict, held: int) -> None:
    """A producer worker's result is only a figure if nothing failed or stayed queued and the
    partitions grew by at least what was acknowledged (the warm-up record included)."""
    if res["failed"] or res["unacked"]:
        raise PhaseError(f"{res['failed']} failed, {res['unacked']} unacknowledged: {res['errors'][:3]}")
    if held < res["acked"] + res["warmup_acked"]:
        raise PhaseError(f"{res['acked']:,} acknowledged but the partitions grew by {held:,}")


def held_records(bootstrap: str, topic: str, partitions: int) -> int:
    """Sum of the partitions' high watermarks minus log start offsets."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "twinlog-bench-count"})
    try:
        return sum(high - low for low, high in (
            c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
            for p in range(partitions)))
    finally:
        c.close()
