"""A confluent-kafka Consumer configured as the compat tests read: from the start, no commits, CRCs checked."""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer


def make_consumer(broker, stats_cb=None, **config) -> Consumer:
    conf = {"bootstrap.servers": broker.bootstrap, "client.id": "compat-confluent",
            "group.id": f"compat-unused-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
            "enable.auto.offset.store": False, "auto.offset.reset": "earliest", "check.crcs": True,
            "enable.partition.eof": True}
    conf.update({k.replace("_", "."): v for k, v in config.items()})
    if stats_cb is not None:  # librdkafka's statistics JSON, every statistics.interval.ms, from poll()
        conf["stats_cb"] = stats_cb
    return Consumer(conf)
