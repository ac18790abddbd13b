"""Topic names and topic creation for compat tests.

Tests share a module-scoped broker, so every test makes its own topic with `unique_topic`.
Topics are created explicitly through kafka-python's KafkaAdminClient (CreateTopics), never by
auto-creation, so a test knows its partition count; `create_topic` returns only when Metadata
shows every partition with a leader, because a create that answers before the topic is usable
would make the first produce of a test race it.
"""

from __future__ import annotations

import re
import uuid

from kafka import KafkaAdminClient

from compat_tests.helpers.waiting import wait_until

_TOPIC_CHARS = re.compile(r"[^a-zA-Z0-9._-]")


def unique_topic(prefix: str = "t") -> str:
    return f"{_TOPIC_CHARS.sub('-', prefix)[:180]}-{uuid.uuid4().hex[:12]}"


def admin_client(bootstrap: str, **config) -> KafkaAdminClient:
    config.setdefault("client_id", "twinlog-compat-admin")
    config.setdefault("request_timeout_ms", 15000)
    return KafkaAdminClient(bootstrap_servers=bootstrap, **config)


def create_topic(bootstrap: str, name: str, partitions: int = 1, configs: dict | None = None,
                 timeout: float = 15.0) -> str:
    # The request may take the whole `timeout` (the broker answers CreateTopics once every
    # partition is made): the client must not give up on it first.
    admin = admin_client(bootstrap, request_timeout_ms=int(timeout * 1000) + 5_000)
    try:
        result = admin.create_topics(
            {name: {"num_partitions": partitions, "replication_factor": 1, "configs": configs or {}}},
            timeout_ms=int(timeout * 1000))
        errors = [(t["name"], t["error_code"]) for t in result["topics"] if t["error_code"]]
        assert not errors, f"CreateTopics {name}: {errors}"
        wait_for_partitions(admin, name, partitions, timeout)
    finally:
        admin.close()
    return name


def wait_for_partitions(admin: KafkaAdminClient, name: str, partitions: int, timeout: float = 15.0) -> list[dict]:
    """Poll Metadata until `name` has exactly `partitions` partitions, each with a leader."""
    def ready() -> list[dict] | None:
        topics = admin.describe_topics([name])
        if topics and topics[0]["error_code"] == 0:
            parts = topics[0]["partitions"]
            if (len(parts) == partitions
                    and all(p["error_code"] == 0 and p["leader_id"] >= 0 for p in parts)):
                return sorted(parts, key=lambda p: p["partition_index"])
        return None

    return wait_until(ready, f"topic {name} with {partitions} partitions, each led", timeout=timeout)
