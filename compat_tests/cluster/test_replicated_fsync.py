"""--flush-messages 1 in a cluster (issue 14 item 6): an acks=all acknowledgement comes only
after every ISR member fsynced the record.

What it proves, and how: a SIGKILL leaves the page cache, so killing brokers cannot show an
fsync; pulling the power is not available to a test. Instead strace, attached to both
followers, records each fsync they complete (wall clock). For every acks=all produce, sent
while all three replicas are in the ISR, each follower must have completed an fsync of the
partition's log file (segment: its .log; commitlog: the shared commitlog) between the produce
being sent and its acknowledgement arriving. Before fsync-before-report, followers never
fsynced their logs on the fetch path: no such fsync exists. It does not prove that the disk
honours fsync (a drive's volatile cache, a VM's), only that the broker asks for it in time.
"""

from __future__ import annotations

import time

import pytest

from compat_tests.helpers.broker_process import STORAGE_MODES
from compat_tests.helpers.cluster import Cluster, running_cluster
from compat_tests.helpers.fsync_trace import FsyncTrace
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.topics import unique_topic

pytestmark = pytest.mark.timeout(120)

PRODUCES = 5


@pytest.fixture(params=STORAGE_MODES)
def cluster(request):
    with running_cluster(request.param, extra_args=("--flush-messages", "1")) as c:
        yield c


def holds_the_partition(cluster: Cluster, node: int, topic: str, path: str) -> bool:
    data_dir = str(cluster.brokers[node].data_dir)
    if not path.startswith(data_dir):
        return False
    if cluster.storage_mode == "segment":
        return f"/{topic}-0/" in path and path.endswith(".log")
    return "/commitlog-store/commitlog/" in path


def test_an_acks_all_ack_follows_an_fsync_on_every_follower(cluster, tmp_path):
    topic = unique_topic("fsync-isr")
    cluster.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
    cluster.wait_for(lambda md: len(md["topics"][topic][0]["isr"]) == 3, "the ISR whole")
    leader = cluster.leader(topic)
    followers = [n for n in cluster.brokers if n != leader]
    traces = {n: FsyncTrace(cluster.brokers[n].pid, tmp_path / f"strace-{n}.txt") for n in followers}
    produced = []  # (sent at, acknowledged at)
    try:
        with Client.to(cluster.brokers[leader]) as c:
            for i in range(PRODUCES):
                sent = time.time()
                p = c.produce(topic, 0, make_batch([b"durable %d" % i]), acks=-1)
                assert p.error_code == 0 and p.base_offset == i, p
                produced.append((sent, time.time()))
        isr = cluster.metadata()["topics"][topic][0]["isr"]
    finally:
        fsyncs = {n: t.stop() for n, t in traces.items()}
    assert sorted(isr) == [1, 2, 3], f"a follower left the ISR while producing: {isr}"
    for node in followers:
        ours = [f.done_at for f in fsyncs[node] if holds_the_partition(cluster, node, topic, f.path)]
        missing = [i for i, (sent, acked) in enumerate(produced) if not any(sent < t < acked for t in ours)]
        assert not missing, (f"follower {node} acknowledged produces {missing} without an fsync of its log "
                             f"before the ack; fsyncs seen: {fsyncs[node][:10]}")
