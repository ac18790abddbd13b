"""Metadata's auto-creation answers as Kafka's: a topic another client has just created is
LEADER_NOT_AVAILABLE (retriable) until this broker knows it, never TOPIC_ALREADY_EXISTS. Kafka's
AutoTopicCreationManager sends the creation and answers LEADER_NOT_AVAILABLE for it; the Java
consumer's partitionsFor takes any other error as fatal. Kafka Connect's worker died so on a
3-broker cluster ("Unexpected error fetching metadata ... TopicExistsException"): its admin
client had created the topic a moment before, through another broker."""

from __future__ import annotations

import os
import signal

import pytest

from compat_tests.helpers.cluster import running_cluster
from compat_tests.helpers.raw_kafka import Client, build_request
from compat_tests.helpers.topics import unique_topic

NONE, LEADER_NOT_AVAILABLE = 0, 5
TOPICS = 10


@pytest.fixture
def cluster():
    with running_cluster() as cluster:
        yield cluster


def test_a_topic_just_created_elsewhere_is_retriable_not_existing(cluster):
    """Broker 2 is paused while broker 1 creates each topic, and its Metadata request is sent
    before it resumes: on resuming it has the request and etcd's news of the topic to handle,
    in either order."""
    codes = []
    paused = cluster.brokers[2]
    with Client("127.0.0.1", cluster.brokers[1].port) as creator, Client("127.0.0.1", paused.port) as asker:
        for _ in range(TOPICS):
            topic = unique_topic("auto-race")
            os.kill(paused.pid, signal.SIGSTOP)
            try:
                assert creator.request(19, 7, validate_only=False, timeout=30_000, topics=[{
                    "name": topic, "num_partitions": -1, "replication_factor": -1, "configs": [],
                    "assignments": [{"partition_index": 0, "broker_ids": [1]}]}]).topics[0].error_code == NONE
                asked = asker.send(build_request(3, 12, topics=[{"name": topic, "topic_id": None}],
                                                 allow_auto_topic_creation=True,
                                                 include_cluster_authorized_operations=False,
                                                 include_topic_authorized_operations=False))
            finally:
                os.kill(paused.pid, signal.SIGCONT)
            codes.append(asker.recv(3, 12, asked, timeout=30).topics[0].error_code)
    assert set(codes) <= {NONE, LEADER_NOT_AVAILABLE}, codes
