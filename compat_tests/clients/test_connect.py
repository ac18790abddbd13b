"""Kafka Connect 4.3 distributed workers against twinlog, in each storage layout.

One worker per module (ConnectDistributed, exactly.once.source.support=enabled; see
connect_worker.py) runs Kafka's own FileStreamSource and FileStreamSink connectors:

- every line of a file reaches the topic and the sink file once and in order, written in
  transactions (the topic holds their markers);
- a second worker joins the group: the broker's group coordinator runs the `connect` protocol
  and the tasks spread over both workers, then come back when it leaves;
- kill -9 of the worker while the source is mid-file, then a restart: the new task fences the dead
  one's transaction and goes on from the offset committed with the last transaction, so a
  read_committed consumer sees every line exactly once, in order.
"""

from __future__ import annotations

import pytest

from compat_tests.helpers.committed_reader import committed_values, last_stable_offset
from compat_tests.helpers.connect_worker import Appender, ConnectWorker, append, lines, source_config
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import create_topic, unique_topic
from compat_tests.helpers.waiting import wait_until

DESCRIBE_GROUPS = 15


@pytest.fixture(scope="module")
def worker(_module_broker, tmp_path_factory):
    w = ConnectWorker(_module_broker.bootstrap, tmp_path_factory.mktemp("connect"), unique_topic("connect"))
    try:
        yield w.start()
    finally:
        w.kill()


def sink_config(path, topics: str, tasks: int = 1) -> dict:
    return {"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(path), "topics": topics, "tasks.max": str(tasks),
            "consumer.override.isolation.level": "read_committed"}


def committed_lines(broker, topic: str) -> list[str]:
    return [v.decode() for v in committed_values(broker.bootstrap, topic)]


def file_lines(path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except FileNotFoundError:
        return []


def test_filestream_source_to_sink_every_line_once_in_order(broker, worker, tmp_path):
    topic = create_topic(broker.bootstrap, unique_topic("connect-lines"))
    source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
    append(source, lines(0, 3000))
    worker.put_connector("lines-src", source_config(source, topic))
    worker.put_connector("lines-sink", sink_config(sink, topic))
    worker.wait_running("lines-src")
    worker.wait_running("lines-sink")
    wait_until(lambda: len(file_lines(sink)) >= 3000, "the first 3,000 lines in the sink file", timeout=60)
    # The source tails its file: lines appended later follow.
    append(source, lines(3000, 2000))
    wait_until(lambda: len(file_lines(sink)) >= 5000, "all 5,000 lines in the sink file", timeout=60)

    expected = lines(0, 5000)
    assert file_lines(sink) == expected
    assert committed_lines(broker, topic) == expected
    # Records and source offsets went in transactions: their commit markers take offsets too.
    with Client.to(broker) as c:
        assert c.log_end_offset(topic) > 5000
    worker.assert_no_failed_task("lines-src")
    for name in ("lines-src", "lines-sink"):
        worker.delete_connector(name)


def describe_group(broker, group: str):
    with Client.to(broker) as c:
        (g,) = c.request(DESCRIBE_GROUPS, 5, groups=[group], include_authorized_operations=False).groups
    return g


def task_workers(worker: ConnectWorker, name: str) -> list[str]:
    status = worker.status(name)
    if status is None or any(t["state"] != "RUNNING" for t in status["tasks"]):
        return []
    return sorted(t["worker_id"] for t in status["tasks"])


def test_second_worker_joins_and_tasks_rebalance(broker, worker, tmp_path):
    topic = create_topic(broker.bootstrap, unique_topic("connect-spread"), partitions=4)
    worker.put_connector("spread-sink", sink_config(tmp_path / "out.txt", topic, tasks=4))
    worker.wait_running("spread-sink", tasks=4)
    assert task_workers(worker, "spread-sink") == [worker.worker_id] * 4

    second = ConnectWorker(broker.bootstrap, tmp_path / "second", worker.group_id)
    try:
        second.start()
        # The incremental cooperative assignor balances the tasks, two each, over one or more
        # rounds (a round may leave them 3/1 on the way: seen once on a loaded machine).
        spread = wait_until(lambda: (w := task_workers(worker, "spread-sink")) and len(set(w)) == 2
                            and w.count(worker.worker_id) == 2 and w,
                            "the four tasks spread two and two over both workers", timeout=90)
        assert sorted(set(spread)) == sorted([worker.worker_id, second.worker_id])

        group = wait_until(lambda: (g := describe_group(broker, worker.group_id)).group_state == "Stable"
                           and len(g.members) == 2 and g, "the Connect group Stable with two members")
        assert group.error_code == 0
        assert group.protocol_type == "connect"
        # exactly.once.source.support=enabled needs the session-keyed protocol (KIP-507, KIP-618).
        assert group.protocol_data == "sessioned"
        assert sorted(m.client_id for m in group.members) == sorted(
            [f"connect-{worker.worker_id}", f"connect-{second.worker_id}"])
    finally:
        second.stop()
    # A clean stop leaves the group; its tasks come back to the first worker.
    wait_until(lambda: task_workers(worker, "spread-sink") == [worker.worker_id] * 4,
               "all four tasks back on the first worker", timeout=90)
    worker.delete_connector("spread-sink")


def test_kill_9_mid_stream_then_restart_exactly_once(broker, worker, tmp_path):
    topic = create_topic(broker.bootstrap, unique_topic("connect-kill"))
    source = tmp_path / "in.txt"
    source.touch()
    total = 20_000
    # About 1,000 lines a second: still writing while the worker is killed and while it restarts.
    appender = Appender(source, total, chunk=50, pause=0.05)
    worker.put_connector("kill-src", source_config(source, topic))
    worker.wait_running("kill-src")
    appender.start()
    wait_until(lambda: last_stable_offset(broker.bootstrap, topic) >= 2000,
               "about 2,000 lines committed before the kill", timeout=60)
    worker.kill()
    at_kill = committed_lines(broker, topic)
    assert len(at_kill) < total, "the source had finished before the kill: nothing was cut mid-stream"
    assert at_kill == lines(0, len(at_kill))

    worker.start()
    worker.wait_running("kill-src")
    appender.join(timeout=120)
    wait_until(lambda: len(committed_values(broker.bootstrap, topic)) >= total,
               f"all {total:,} lines committed after the restart", timeout=120, interval=1)
    assert committed_lines(broker, topic) == lines(0, total)
    worker.assert_no_failed_task("kill-src")
    worker.delete_connector("kill-src")
