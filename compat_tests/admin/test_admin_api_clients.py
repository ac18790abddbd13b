"""The config, log-dir, offset-deletion and topic-description admin calls of real clients:
kafka-python's KafkaAdminClient, confluent-kafka's AdminClient (librdkafka) and the Java Admin
(kafka-clients 4.3.0), against a real broker in both layouts. (confluent-kafka's Python AdminClient has no call for OffsetDelete;
kafka-python's delete_group_offsets is the OffsetDelete client here.)

kafka-python infers the broker's Kafka version from ApiVersions (its newest marker present
wins) and, when that is newer than a client's configured api_version, sends that version's own
table instead of what the broker listed: so ApiVersions must not claim a generation whose
versions we do not serve (DescribeLogDirs v5 alone read as 4.3; see wire/protocol.py). Every API
listed is served up to Kafka 4.3's version; 4.3's table also holds APIs not served here (KRaft's
own, client telemetry), which a client configured for 4.2 or 4.3 would send only when its user
calls them.
"""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from kafka.admin import ConfigResource as KpConfigResource, ConfigResourceType
from kafka.errors import NoError
from kafka.protocol.broker_version_data import BROKER_API_VERSIONS
from kafka.structs import OffsetAndMetadata, TopicPartition

from compat_tests.helpers.java_client import check_command
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.topics import admin_client, unique_topic

TOPIC = ConfigResourceType.TOPIC


def _confluent(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def _described(admin: AdminClient, topic: str) -> dict[str, str]:
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return {name: entry.value for name, entry in admin.describe_configs([res])[res].result(10).items()}


def _listed(broker) -> dict[int, tuple[int, int]]:
    with Client.to(broker) as raw:
        r = raw.request(18, 3, client_software_name="twinlog-compat", client_software_version="1")
    return {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}


def test_kafka_python_reads_kafka_4_3(broker):
    """kafka-python keys each Kafka version on one marker, newest first (4.3: DescribeLogDirs v5,
    4.2: ListOffsets v11, 4.1: Produce v13): every API is served up to Kafka 4.3's versions, so it
    reads 4.3 from what we list, and keeps our list."""
    with admin_client(broker.bootstrap) as admin:
        assert admin._manager.broker_version == (4, 3)
        assert admin._manager.broker_version_data.api_versions == _listed(broker)


@pytest.mark.parametrize("configured", [(4, 0), (4, 1), (4, 2), (4, 3)])
def test_kafka_python_configured_for_kafka_4_sends_only_served_versions(broker, configured):
    """Configured for a Kafka version the broker reads as no older, kafka-python keeps that
    version's own table and sends its versions, not the broker's: each must be served. (Its 4.0
    table holds Metadata v13 and Fetch v17: when DescribeLogDirs v5 alone made the broker read as
    4.3, it sent those and the broker closed the connection; the kafka-python suite could not
    bootstrap.)"""
    listed = _listed(broker)
    unserved = {key: (hi, listed[key][1]) for key, (_, hi) in BROKER_API_VERSIONS[configured].items()
                if key in listed and hi > listed[key][1]}
    assert unserved == {}
    with admin_client(broker.bootstrap, api_version=configured) as admin:
        assert admin._manager.broker_version == configured
        topic = unique_topic("kp-4")
        admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}})
        assert topic in admin.list_topics()


def test_kafka_python_admin(broker):
    topic, group = unique_topic("kp-admin"), f"g-{uuid.uuid4().hex[:10]}"
    with Client.to(broker) as raw:
        raw.create_topic(topic, 2)
        assert raw.produce(topic, 0, make_batch([b"x" * 100])).base_offset == 0
    with admin_client(broker.bootstrap) as admin:
        result = admin.alter_configs([KpConfigResource(TOPIC, topic, {"retention.ms": "3600000",
                                                                        "cleanup.policy": ("APPEND", "compact")})])
        assert result == {"topic": {topic: "OK"}}
        configs = admin.describe_configs([KpConfigResource(TOPIC, topic)])["topic"][topic]
        assert configs["retention.ms"]["value"] == "3600000"
        assert configs["cleanup.policy"]["value"] == "delete,compact"
        assert configs["cleanup.policy"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"

        (only_broker,) = admin.describe_log_dirs({topic: [0, 1]})
        (log_dir,) = [d for d in only_broker["log_dirs"] if d["topics"]]
        sizes = {p["partition_index"]: p["partition_size"] for t in log_dir["topics"] for p in t["partitions"]}
        assert sizes[0] > 100 and sizes[1] == 0
        assert log_dir["log_dir"].endswith("commitlog-store") == (broker.storage_mode == "commitlog")

        admin.alter_group_offsets(group, {TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1),
                                          TopicPartition(topic, 1): OffsetAndMetadata(0, "", -1)})
        deleted = admin.delete_group_offsets(group, [TopicPartition(topic, 0)])
        assert deleted == {TopicPartition(topic, 0): NoError}
        assert list(admin.list_group_offsets({group: None})[group]) == [TopicPartition(topic, 1)]


def test_confluent_admin(broker):
    topic = unique_topic("ck-admin")
    with Client.to(broker) as raw:
        raw.create_topic(topic, 3)
    admin = _confluent(broker.bootstrap)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(10)
    configs = _described(admin, topic)
    assert configs["cleanup.policy"] == "delete,compact" and configs["segment.bytes"] == "1048576"

    bad = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND)])
    with pytest.raises(Exception, match="LIST"):
        admin.incremental_alter_configs([bad])[bad].result(10)

    legacy = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"retention.ms": "7200000"})
    admin.alter_configs([legacy])[legacy].result(10)
    configs = _described(admin, topic)
    # AlterConfigs replaces the whole set: the incremental changes are gone.
    assert configs["retention.ms"] == "7200000" and configs["cleanup.policy"] == "delete"

    broker_res = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
        ConfigEntry("log.cleaner.threads", "3", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(Exception, match="dynamically"):
        admin.incremental_alter_configs([broker_res])[broker_res].result(10)

    (description,) = admin.describe_topics(TopicCollection([topic])).values()
    assert [p.id for p in description.result(10).partitions] == [0, 1, 2]


def test_java_admin(broker):
    """kafka-clients 4.3.0's Admin (java/AdminApisCheck.java): its describeTopics goes through
    DescribeTopicPartitions now that the broker lists it."""
    topic, group = unique_topic("java-admin"), f"g-{uuid.uuid4().hex[:10]}"
    with Client.to(broker) as raw:
        raw.create_topic(topic, 2)
        assert raw.produce(topic, 0, make_batch([b"x" * 100])).base_offset == 0
    run = subprocess.run(check_command("AdminApisCheck", broker.bootstrap, topic, group),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["cleanup.policy"] == "delete,compact" and seen["retention.ms"] == "3600000"
    assert seen["sizes"]["0"] > 100 and seen["sizes"]["1"] == 0
    assert seen["logDir"].endswith("commitlog-store") == (broker.storage_mode == "commitlog")
    assert seen["offsetsLeft"] == [1]
    assert seen["partitions"] == [0, 1]
