"""Topic admin does its file work off the event loop (issue 13 items 4 and 5).

Against a real broker process in both storage layouts, a health probe (ApiVersions v0 on a new
connection every 20 ms, as the issue's probe) runs while
- CreateTopics makes 500 topics in one request,
- Metadata auto-creates 500 topics in one request,
- DeleteTopics deletes a 1,000-partition topic;
its longest wait must stay under PROBE_BOUND_S (in one of a few attempts: stall_bounds.py).
Afterwards the topics take a produce and give the record back, and the deleted topic's files are gone once --file-delete-delay-ms has passed.
A restart with 2,000 orphan partitions (a topic whose directories outlived topics.json) answers
at once and removes them in the background.

Before the change these requests did their file work on the event loop: on a quiet 2-core box
the probe waited up to 1.1 / 2.4 / 0.4 s (segment) and 1.4 / 2.9 / 2.2 s (commitlog), and the
commitlog restart spent ~27 ms per orphan (a checkpoint of every queue for each) before it
answered. The figures are in FINDINGS.md; the issue's target is 100 ms, the bound here is
wider, and the attempts there, so that a loaded CI machine does not fail it by scheduling alone.
"""

from __future__ import annotations

import json
import os
import time

from compat_tests.helpers.probing import WAIT, create_topics, delete_topic, probing
from compat_tests.helpers.raw_kafka import Client, make_batch, read_records
from compat_tests.helpers.stall_bounds import within_bound_once
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

PROBE_BOUND_S = 0.5
DELETE_DELAY_MS = 1_000


def auto_create(client: Client, names: list[str]) -> dict[str, int]:
    r = client.request(3, 12, recv_timeout=WAIT, topics=[{"name": n, "topic_id": None} for n in names],
                       allow_auto_topic_creation=True, include_cluster_authorized_operations=False,
                       include_topic_authorized_operations=False)
    return {t.name: (t.error_code, len(t.partitions)) for t in r.topics}


def round_trip(client: Client, topic: str, partition: int) -> None:
    value = f"{topic}/{partition}".encode()
    p = client.produce(topic, partition, make_batch([value]))
    assert p.error_code == 0, (topic, partition, p)
    fetched = client.fetch(topic, partition, p.base_offset)
    assert [r[3] for r in read_records(fetched.records)] == [value]


def mentioning(data_dir, name: str) -> list[str]:
    """Paths under the data dir with `name` in them (a commitlog queue is <topic>/<partition>)."""
    paths = (os.path.relpath(os.path.join(root, entry), data_dir)
             for root, dirs, files in os.walk(data_dir) for entry in dirs + files)
    return [p for p in paths if name in p]


def probed(broker, what: str, operation) -> None:
    """Run operation(attempt number) with the probe running until its longest wait is under
    PROBE_BOUND_S, a few attempts at most (stall_bounds.py); each attempt names new topics."""
    def attempt(number: int) -> float:
        waits: list[float] = []
        with probing(broker, waits):
            operation(number)
        assert len(waits) >= 3, waits
        print(f"\n{broker.storage_mode}: {what}: longest probe wait {max(waits) * 1000:.0f} ms over {len(waits)}")
        return max(waits)

    within_bound_once(attempt, PROBE_BOUND_S, f"a probe while {what}")


def test_probe_answers_while_topics_are_created_and_deleted(broker_factory):
    broker = broker_factory("--file-delete-delay-ms", str(DELETE_DELAY_MS))
    prefix = unique_topic("stall")
    created: list[str] = []
    auto: list[str] = []
    big = f"{prefix}-big"
    deleted_at = [0.0]
    with Client.to(broker) as c:
        def create(number: int) -> None:
            names = [f"{prefix}-c{number}-{i}" for i in range(500)]
            assert create_topics(c, dict.fromkeys(names, 1)) == dict.fromkeys(names, 0)
            created.extend(names)

        def create_by_metadata(number: int) -> None:
            names = [f"{prefix}-a{number}-{i}" for i in range(500)]
            assert auto_create(c, names) == dict.fromkeys(names, (0, 1))
            auto.extend(names)

        def delete(number: int) -> None:
            if number:  # the one before was deleted: make it again, unprobed
                assert create_topics(c, {big: 1_000}) == {big: 0}
            assert delete_topic(c, big) == 0
            deleted_at[0] = time.monotonic()

        probed(broker, "500 topics are created", create)
        probed(broker, "Metadata creates 500 topics", create_by_metadata)
        assert create_topics(c, {big: 1_000}) == {big: 0}
        round_trip(c, big, 999)
        probed(broker, "a 1,000-partition topic is deleted", delete)

        # What was created takes records; the deleted topic is gone from Metadata at once.
        for topic, partition in ((created[0], 0), (created[-1], 0), (auto[0], 0), (auto[-1], 0)):
            round_trip(c, topic, partition)
        (gone,) = c.metadata([big]).topics
        assert gone.error_code == 3, gone  # UNKNOWN_TOPIC_OR_PARTITION
        # Its files: renamed at once, removed after the delay.
        wait_until(lambda: not mentioning(broker.data_dir, big), f"{big}'s files removed",
                   timeout=deleted_at[0] + DELETE_DELAY_MS / 1000 + 20 - time.monotonic(), interval=0.2)
        assert time.monotonic() - deleted_at[0] >= DELETE_DELAY_MS / 1000 * 0.9, "removed before the delay"
        # The same name again: a new, empty topic.
        assert create_topics(c, {big: 2}) == {big: 0}
        assert c.log_end_offset(big, 1) == 0
        round_trip(c, big, 1)


def test_restart_removes_orphan_partitions_in_the_background(fresh_broker):
    broker = fresh_broker
    orphan, kept = unique_topic("orphan"), unique_topic("kept")
    with Client.to(broker) as c:
        assert create_topics(c, {orphan: 2_000, kept: 1}) == {orphan: 0, kept: 0}
        round_trip(c, orphan, 1_999)
        round_trip(c, kept, 0)
    assert broker.stop() == 0
    path = broker.data_dir / "topics.json"
    saved = json.loads(path.read_text())
    del saved["topics"][orphan]  # as after a crash between creating the files and listing the topic
    path.write_text(json.dumps(saved))
    assert len(mentioning(broker.data_dir, orphan)) >= 2_000

    started = time.monotonic()
    broker.start(timeout=WAIT)
    answering = time.monotonic() - started
    assert answering < 10, f"answered {answering:.1f} s after the start"
    wait_until(lambda: not mentioning(broker.data_dir, orphan), f"{orphan}'s files removed",
               timeout=started + WAIT - time.monotonic())
    removed = time.monotonic() - started
    print(f"\n{broker.storage_mode}: 2,000 orphans: answering after {answering:.2f} s, removed after {removed:.2f} s")
    with Client.to(broker) as c:
        round_trip(c, kept, 0)
        assert c.log_end_offset(kept, 0) == 2
        assert create_topics(c, {orphan: 1}) == {orphan: 0}  # the name is free, and new
        assert c.log_end_offset(orphan, 0) == 0
