"""One request may create at most 10,000 partitions, as Kafka's controller allows (issue 13 item 4).

Against a real broker process in both storage layouts:
- CreateTopics asking for more than 10,000 partitions in all (one topic of 2^31-1, or two
  topics that only together pass the limit) is refused topic by topic with POLICY_VIOLATION
  "Excessively large number of partitions per request.", validate_only or not; no topic appears
  in Metadata and no partition directory is made.
- CreatePartitions growing a topic by more than 10,000 (to 2^31-1) is refused with
  POLICY_VIOLATION and the topic keeps its partitions and files; within one request a second
  topic that would take the total past 10,000 is refused while the first grows.
- Metadata auto-creating topics worth more than 10,000 partitions creates none of them.
- Health probes (ApiVersions v0 on a new connection every 100 ms) are answered within a second
  while those requests are refused.
Before the limit, these requests made the broker open partitions until it ran out of file
descriptors or blocked its event loop for minutes; the tests time out on that code.
"""

from __future__ import annotations

import os
import threading
import time

from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.stall_bounds import probe_wait
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

NONE, POLICY_VIOLATION = 0, 44
MAX_INT32 = 2**31 - 1
ALL_TOO_MANY = "Excessively large number of partitions per request."
BATCH_TOO_LARGE = "Unable to perform excessively large batch operation."
WAIT = 60.0  # the old code spent minutes on these requests: it fails here by timing out


def create_topics(client: Client, counts: dict[str, int], validate_only: bool = False):
    r = client.request(19, 7, recv_timeout=WAIT, validate_only=validate_only, timeout=30_000, topics=[
        {"name": name, "num_partitions": n, "replication_factor": 1, "assignments": [], "configs": []}
        for name, n in counts.items()])
    return {t.name: t for t in r.topics}


def create_partitions(client: Client, counts: dict[str, int], validate_only: bool = False):
    r = client.request(37, 3, recv_timeout=WAIT, validate_only=validate_only, timeout=30_000, topics=[
        {"name": name, "count": n, "assignments": None} for name, n in counts.items()])
    return {t.name: t for t in r.results}


def partition_counts(client: Client, names: list[str]) -> dict[str, int | None]:
    """Partitions Metadata lists per topic (None for a topic it does not know)."""
    r = client.metadata(names)
    return {t.name: len(t.partitions) if t.error_code == NONE else None for t in r.topics}


def entries(broker) -> set[str]:
    """Everything under the data dir, as paths relative to it."""
    found = set()
    for root, dirs, files in os.walk(broker.data_dir):
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(root, name), broker.data_dir))
    return found


def mentioning(paths: set[str], names: list[str]) -> set[str]:
    return {p for p in paths if any(n in p for n in names)}


def test_create_topics_over_the_limit_is_refused_and_creates_nothing(broker):
    one, two, three = (unique_topic(p) for p in ("huge", "half-a", "half-b"))
    with Client.to(broker) as c:
        for counts in ({one: MAX_INT32}, {two: 5_000, three: 5_001}):
            for validate_only in (True, False):
                results = create_topics(c, counts, validate_only)
                assert {n: (t.error_code, t.error_message) for n, t in results.items()} == {
                    n: (POLICY_VIOLATION, ALL_TOO_MANY) for n in counts}, (counts, validate_only)
        assert partition_counts(c, [one, two, three]) == {one: None, two: None, three: None}
        assert mentioning(entries(broker), [one, two, three]) == set()


def test_create_partitions_over_the_limit_is_refused_and_adds_nothing(broker):
    small, other = unique_topic("grow-a"), unique_topic("grow-b")
    with Client.to(broker) as c:
        c.create_topic(small, 2)
        c.create_topic(other, 1)
        before = entries(broker)
        for validate_only in (True, False):
            (result,) = create_partitions(c, {small: MAX_INT32}, validate_only).values()
            assert (result.error_code, result.error_message) == (POLICY_VIOLATION, BATCH_TOO_LARGE)
        assert partition_counts(c, [small]) == {small: 2}
        assert mentioning(entries(broker), [small]) == mentioning(before, [small])
        # Within one request the budget is shared: 4 new partitions fit, the next 9,999 do not.
        results = create_partitions(c, {small: 6, other: 10_000})
        assert (results[small].error_code, results[other].error_code) == (NONE, POLICY_VIOLATION)
        assert results[other].error_message == BATCH_TOO_LARGE
        assert partition_counts(c, [small, other]) == {small: 6, other: 1}


def test_metadata_auto_creation_over_the_limit_creates_nothing(broker_factory):
    broker = broker_factory("--num-partitions", "5001")
    names = [unique_topic("auto") for _ in range(2)]
    with Client.to(broker) as c:
        r = c.request(3, 12, recv_timeout=WAIT, topics=[{"name": n, "topic_id": None} for n in names],
                      allow_auto_topic_creation=True, include_cluster_authorized_operations=False,
                      include_topic_authorized_operations=False)
        assert {t.name: len(t.partitions) for t in r.topics} == {n: 0 for n in names}
        assert partition_counts(c, names) == {n: None for n in names}
        assert mentioning(entries(broker), names) == set()
        # One of them alone (5,001 partitions) is within the limit and is created.
        r = c.request(3, 12, recv_timeout=WAIT, topics=[{"name": names[0], "topic_id": None}],
                      allow_auto_topic_creation=True, include_cluster_authorized_operations=False,
                      include_topic_authorized_operations=False)
        assert partition_counts(c, names) == {names[0]: 5_001, names[1]: None}


def test_health_probes_answered_while_over_limit_requests_are_refused(broker):
    """The refusal costs nothing: probes keep their answer under a second throughout."""
    huge, grown = unique_topic("probe-huge"), unique_topic("probe-grow")
    waits: list[float] = []
    done = threading.Event()

    def probe() -> None:
        while not done.is_set():
            waits.append(probe_wait(broker, WAIT))
            time.sleep(0.1)  # the probes' period

    with Client.to(broker) as c:
        c.create_topic(grown, 1)
        prober = threading.Thread(target=probe)
        prober.start()
        try:
            wait_until(lambda: len(waits) >= 2, "probes before the requests", timeout=WAIT)
            assert create_topics(c, {huge: MAX_INT32})[huge].error_code == POLICY_VIOLATION
            assert create_partitions(c, {grown: MAX_INT32})[grown].error_code == POLICY_VIOLATION
            after = len(waits)
            wait_until(lambda: len(waits) >= after + 2, "probes after the requests", timeout=WAIT)
        finally:
            done.set()
            prober.join()
    assert len(waits) >= 3 and max(waits) < 1.0, f"longest probe wait {max(waits):.2f}s over {len(waits)} probes"
