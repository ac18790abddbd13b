"""Exactly-once consume-transform-produce in a three-broker cluster (both layouts), across a
SIGKILL of the transaction coordinator's broker mid-transaction and then of an output
partition's leader mid-transaction.

The application (transform_app.py, confluent-kafka) has a transaction open, its records and
offsets sent, when a broker dies. It then does what an application does: commit, retrying what
is retriable and aborting what must be aborted, and a fresh instance (same transactional id and
group) carries on from the group's committed offsets. Whichever way each commit went, the
committed output holds every input exactly once, in order.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaException, Producer

from compat_tests.helpers.broker_process import STORAGE_MODES
from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.transform_app import TXN_TIMEOUT_S, TransformApp, assert_exactly_once
from compat_tests.helpers.txn_requests import coordinator_of

pytestmark = pytest.mark.timeout(600)

PARTITIONS = 3
PER_PARTITION = 10
BATCH = 6


@pytest.fixture(params=STORAGE_MODES)
def cluster(request):
    with running_cluster(request.param, extra_args=("--transaction-state-log-partitions", "3",
                                                    "--offsets-topic-partitions", "3")) as c:
        yield c


def commit_as_an_application_does(app: TransformApp) -> str:
    """commit_transaction after a broker died under it: retried while retriable, aborted when the
    client says it must be; "committed", "aborted" or "fatal" (a fresh instance takes over)."""
    for _ in range(5):
        try:
            app.producer.commit_transaction(2 * TXN_TIMEOUT_S)
            return "committed"
        except KafkaException as exc:
            err = exc.args[0]
            if err.txn_requires_abort():
                app.producer.abort_transaction(2 * TXN_TIMEOUT_S)
                return "aborted"
            if err.fatal() or not err.retriable():
                return "fatal"
    return "fatal"


def fresh_instance(cluster: Cluster, tid: str, group: str, source: str, sink: str) -> tuple[TransformApp, int]:
    """A new instance of the application and how many inputs are left after the committed offsets."""
    app = TransformApp(cluster.bootstrap, tid, group, source, sink)
    done = app.committed(PARTITIONS)
    return app, PARTITIONS * PER_PARTITION - sum(max(o, 0) for o in done.values())


def test_each_input_once_across_the_coordinators_and_an_output_leaders_kill(cluster):
    source, sink = f"ceos-in-{uuid.uuid4().hex[:8]}", f"ceos-out-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(source, partitions=PARTITIONS)
    cluster.create_topic(sink, partitions=PARTITIONS)
    inputs = {p: [b"in-%d-%02d" % (p, i) for i in range(PER_PARTITION)] for p in range(PARTITIONS)}
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True})
    for i in range(PER_PARTITION):
        for p in range(PARTITIONS):
            producer.produce(source, value=inputs[p][i], partition=p)
    assert producer.flush(60) == 0
    tid, group = f"ceos-{uuid.uuid4().hex[:8]}", f"ceos-g-{uuid.uuid4().hex[:8]}"

    app = TransformApp(cluster.bootstrap, tid, group, source, sink)
    app.process(app.poll(BATCH), "commit")
    app.process(app.poll(BATCH), "open")
    coordinator = coordinator_of(cluster, tid)
    cluster.brokers[coordinator].kill()
    commit_as_an_application_does(app)
    app.close_consumer()

    app, left = fresh_instance(cluster, tid, group, source, sink)
    assert left > BATCH
    app.process(app.poll(BATCH), "commit")
    cluster.brokers[coordinator].start()
    cluster.wait_for(lambda md: len(md["brokers"]) == len(cluster.brokers), "the killed broker back")

    batch = app.poll(BATCH)
    app.process(batch, "open")
    coordinator = coordinator_of(cluster, tid)
    written = {msg.partition() for msg in batch}
    md = cluster.wait_for(lambda md: all(md["topics"].get(sink, {}).get(p, {}).get("leader", -1) >= 0
                                         for p in written), "the output's leaders")  # the restarted broker catches up
    leaders = {p: md["topics"][sink][p]["leader"] for p in written}
    victim = next((n for n in leaders.values() if n != coordinator), next(iter(leaders.values())))
    cluster.brokers[victim].kill()
    commit_as_an_application_does(app)
    app.close_consumer()

    app, left = fresh_instance(cluster, tid, group, source, sink)
    app.process(app.poll(left, timeout=60), "commit")
    # Leave the group first: the next instance's JoinGroup would wait for this member to rejoin
    # (it never polls again), and its OffsetFetch queues behind that JoinGroup on the connection.
    app.close_consumer()
    assert fresh_instance_left(cluster, tid, group, source, sink) == 0
    assert_exactly_once(cluster.bootstrap, sink, PARTITIONS, inputs)


def fresh_instance_left(cluster: Cluster, tid: str, group: str, source: str, sink: str) -> int:
    app, left = fresh_instance(cluster, tid, group, source, sink)
    app.close_consumer()
    return left
