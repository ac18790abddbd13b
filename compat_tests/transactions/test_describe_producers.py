"""DescribeProducers over a raw socket, both storage layouts: the producers a partition's leader
remembers, as Kafka's kafka-transactions.sh describe-producers shows them (KIP-664).

An idempotent producer's last sequence and timestamp; a transactional producer's open
transaction's first offset, gone once its marker is written, which also records the
coordinator epoch; a partition nobody wrote to lists nobody; a partition or topic that does
not exist is UNKNOWN_TOPIC_OR_PARTITION. The same producers are found after a restart, rebuilt
from the log.
"""

from __future__ import annotations

import time

from compat_tests.helpers.producer_state import NONE, describe, produce
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.txn_markers import producer_id, write_marker

UNKNOWN_TOPIC_OR_PARTITION = 3


@over_versions(61)
def test_describe_producers(broker, client, version):
    topic = unique_topic("producers")
    client.create_topic(topic, partitions=2)
    idempotent, transactional = producer_id(client), producer_id(client)
    ts = int(time.time() * 1000)
    produce(client, topic, idempotent, 0, [b"a", b"b"], ts)
    produce(client, topic, idempotent, 2, [b"c"], ts + 1)
    produce(client, topic, transactional, 0, [b"t1", b"t2"], ts + 2, transactional=True)  # offsets 3-4
    assert describe(client, topic, [0, 1, 9], version) == {
        0: (NONE, sorted([(idempotent, 0, 2, ts + 1, -1, -1), (transactional, 0, 1, ts + 2, -1, 3)])),
        1: (NONE, []),
        9: (UNKNOWN_TOPIC_OR_PARTITION, []),
    }
    assert write_marker(client, topic, transactional, commit=True, coordinator_epoch=7) == NONE
    after_marker = {0: (NONE, sorted([(idempotent, 0, 2, ts + 1, -1, -1), (transactional, 0, 1, ts + 2, 7, -1)]))}
    assert describe(client, topic, [0], version) == after_marker
    assert describe(client, "no-such-topic", [0], version) == {0: (UNKNOWN_TOPIC_OR_PARTITION, [])}
    client.close()
    broker.restart()
    with Client.to(broker) as again:
        assert describe(again, topic, [0], version) == after_marker
