"""A Kafka Connect worker on a three-broker twinlog cluster survives the kill of its group
coordinator's broker (etcd and three `twinlog serve --etcd`, compat_tests/helpers/cluster.py).

The worker (ConnectDistributed, exactly.once.source.support=enabled, its config, offset and
status topics and the data topic at replication factor 3) runs a FileStreamSource whose file
grows about 1,000 lines a second. The broker FindCoordinator names for the worker's group is
SIGKILLed mid-file. The worker finds the new coordinator and its task carries on: the worker
process lives, the connector and task stay RUNNING, and a read_committed consumer sees every
line exactly once, in order.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException

from compat_tests.helpers.broker_process import STORAGE_MODES
from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.committed_reader import committed_values, last_stable_offset
from compat_tests.helpers.connect_worker import Appender, ConnectWorker, lines, source_config
from compat_tests.helpers.group_requests import find_coordinator
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until

REPLICATED = {f"{kind}.storage.replication.factor": "3" for kind in ("config", "offset", "status")}


@pytest.fixture(params=STORAGE_MODES)
def cluster(request):
    with running_cluster(request.param) as c:
        yield c


def committed_count(cluster: Cluster, topic: str) -> int:
    try:
        return len(committed_values(cluster.bootstrap, topic))
    except KafkaException:  # the partition's leader was on the killed broker and none is elected yet
        return 0


def test_worker_survives_the_kill_of_its_group_coordinator(cluster, tmp_path):
    topic = unique_topic("connect-failover")
    cluster.create_topic(topic)
    worker = ConnectWorker(cluster.bootstrap, tmp_path, unique_topic("connect"), settings=REPLICATED)
    source = tmp_path / "in.txt"
    source.touch()
    total = 15_000
    appender = Appender(source, total, chunk=50, pause=0.05)
    try:
        worker.start()
        worker.put_connector("failover-src", source_config(source, topic))
        worker.wait_running("failover-src")
        appender.start()
        wait_until(lambda: last_stable_offset(cluster.bootstrap, topic) >= 2000,
                   "about 2,000 lines committed before the kill", timeout=60)
        coordinator = wait_until(lambda: find_coordinator(cluster, worker.group_id), "the group's coordinator")
        assert last_stable_offset(cluster.bootstrap, topic) < total, "the last line came before the kill"
        cluster.brokers[coordinator].kill()

        appender.join(timeout=120)
        wait_until(lambda: committed_count(cluster, topic) >= total,
                   f"all {total:,} lines committed after the kill", timeout=120, interval=1)
        assert committed_values(cluster.bootstrap, topic) == [line.encode() for line in lines(0, total)]
        assert worker.is_running(), f"the worker exited\n{worker.log_tail()}"
        new_coordinator = find_coordinator(cluster, worker.group_id)
        assert new_coordinator not in (None, coordinator)
        worker.wait_running("failover-src")
    finally:
        worker.kill()
