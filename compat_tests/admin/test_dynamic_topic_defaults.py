"""Dynamic broker configs that are topic defaults (broker/settings/dynamic_topic_defaults.py):
IncrementalAlterConfigs / AlterConfigs of message.max.bytes and min.insync.replicas on the
cluster default and on this broker's id are applied at once to every topic without its own
override and to new topics, enforced on produce, described with Kafka's sources and synonyms
(this broker's > the cluster default's > static > default), restored to the static value when
deleted, and kept across a restart. log.cleanup.policy, Kafka's broker name of cleanup.policy
(no broker setting here), is applied the same way.
"""

from __future__ import annotations

import os

from compat_tests.helpers.broker_configs import (
    APPEND, DEFAULT_CONFIG, DELETE, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, INVALID_RECORD,
    INVALID_REQUEST, MESSAGE_TOO_LARGE, NODE, NONE, NOT_ENOUGH_REPLICAS, SET, STATIC_BROKER_CONFIG, alter, described,
    incremental, topic_config)
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.topics import unique_topic

DYNAMIC_TOPIC_CONFIG = 1
STATIC_MAX = "100000"  # --message-max-bytes: the static layer under the dynamic ones
DEFAULT_MAX = str((1 << 20) + 12)  # the table's default
STATIC_SYNONYMS = [("message.max.bytes", STATIC_MAX, STATIC_BROKER_CONFIG),
                   ("message.max.bytes", DEFAULT_MAX, DEFAULT_CONFIG)]


def produce_code(client: Client, topic: str, size: int, acks: int = 1) -> int:
    return client.produce(topic, 0, make_batch([os.urandom(size)]), acks=acks).error_code


def test_topic_defaults_change_at_runtime(broker_factory):
    proc = broker_factory("--message-max-bytes", STATIC_MAX)
    plain, own = unique_topic("dyn-default"), unique_topic("dyn-own")
    with Client.to(proc) as c:
        c.create_topic(plain)
        c.create_topic(own, configs={"max.message.bytes": "200000"})
        assert produce_code(c, plain, 5000) == NONE

        # the cluster default: every topic without its own value takes it at once
        assert incremental(c, 1, "", [("message.max.bytes", SET, "1000")]) == (NONE, None)
        assert topic_config(c, plain, "max.message.bytes") == ("1000", DYNAMIC_DEFAULT_BROKER_CONFIG, [
            ("message.max.bytes", "1000", DYNAMIC_DEFAULT_BROKER_CONFIG),
            *STATIC_SYNONYMS])
        assert produce_code(c, plain, 5000) == MESSAGE_TOO_LARGE
        assert produce_code(c, own, 5000) == NONE  # its own override wins
        assert topic_config(c, own, "max.message.bytes")[:2] == ("200000", DYNAMIC_TOPIC_CONFIG)
        mine = described(c, NODE)["message.max.bytes"]
        assert mine[:2] == ("1000", DYNAMIC_DEFAULT_BROKER_CONFIG)
        assert described(c, "")["message.max.bytes"][:2] == ("1000", DYNAMIC_DEFAULT_BROKER_CONFIG)

        # this broker's own value wins over the cluster default, for new topics too
        assert alter(c, 2, NODE, {"message.max.bytes": "20000"}) == (NONE, None)
        assert topic_config(c, plain, "max.message.bytes") == ("20000", DYNAMIC_BROKER_CONFIG, [
            ("message.max.bytes", "20000", DYNAMIC_BROKER_CONFIG),
            ("message.max.bytes", "1000", DYNAMIC_DEFAULT_BROKER_CONFIG),
            *STATIC_SYNONYMS])
        assert produce_code(c, plain, 5000) == NONE
        later = unique_topic("dyn-later")
        c.create_topic(later)
        assert topic_config(c, later, "max.message.bytes")[:2] == ("20000", DYNAMIC_BROKER_CONFIG)
        assert produce_code(c, later, 30000) == MESSAGE_TOO_LARGE

        # min.insync.replicas: two on a broker alone refuses acks=all
        assert incremental(c, 1, "", [("min.insync.replicas", SET, "2")]) == (NONE, None)
        assert produce_code(c, plain, 10, acks=-1) == NOT_ENOUGH_REPLICAS
        assert produce_code(c, plain, 10, acks=1) == NONE

        # bad values and operations are refused as Kafka refuses them, changing nothing
        code, message = incremental(c, 1, "", [("message.max.bytes", SET, "lots")])
        assert code == INVALID_REQUEST and message.startswith("Invalid value lots for configuration message.max.bytes")
        assert incremental(c, 1, "", [("log.retention.ms", APPEND, "1")]) == (
            INVALID_REQUEST, "Config value append is not allowed for config key: log.retention.ms")
        assert topic_config(c, plain, "max.message.bytes")[0] == "20000"

        # deleting both restores the static value
        assert alter(c, 2, NODE, {}) == (NONE, None)
        assert incremental(c, 1, "", [("message.max.bytes", DELETE, None),
                                      ("min.insync.replicas", DELETE, None)]) == (NONE, None)
        assert topic_config(c, plain, "max.message.bytes")[:2] == (STATIC_MAX, STATIC_BROKER_CONFIG)
        assert described(c, NODE)["message.max.bytes"][:2] == (STATIC_MAX, STATIC_BROKER_CONFIG)
        assert produce_code(c, plain, 50000, acks=-1) == NONE


def test_topic_defaults_survive_a_restart(broker_factory):
    proc = broker_factory()
    topic = unique_topic("dyn-restart")
    with Client.to(proc) as c:
        c.create_topic(topic)
        assert incremental(c, 1, "", [("message.max.bytes", SET, "1000")]) == (NONE, None)
        assert incremental(c, 1, NODE, [("log.retention.ms", SET, "3600000")]) == (NONE, None)
    proc.restart()
    with Client.to(proc) as c:
        assert topic_config(c, topic, "max.message.bytes")[:2] == ("1000", DYNAMIC_DEFAULT_BROKER_CONFIG)
        assert topic_config(c, topic, "retention.ms")[:2] == ("3600000", DYNAMIC_BROKER_CONFIG)
        assert produce_code(c, topic, 5000) == MESSAGE_TOO_LARGE
        assert produce_code(c, topic, 100) == NONE


def test_a_kafka_broker_name_of_a_topic_config_is_applied(broker_factory):
    proc = broker_factory()
    topic = unique_topic("dyn-cleanup")
    with Client.to(proc) as c:
        c.create_topic(topic)
        assert c.produce(topic, 0, make_batch([b"no key"]), acks=1).error_code == NONE
        assert incremental(c, 1, "", [("log.cleanup.policy", SET, "compact")]) == (NONE, None)
        assert topic_config(c, topic, "cleanup.policy") == ("compact", DYNAMIC_DEFAULT_BROKER_CONFIG, [
            ("log.cleanup.policy", "compact", DYNAMIC_DEFAULT_BROKER_CONFIG)])
        assert described(c, "")["log.cleanup.policy"][:2] == ("compact", DYNAMIC_DEFAULT_BROKER_CONFIG)
        # a compacted topic refuses records without a key
        assert c.produce(topic, 0, make_batch([b"no key"]), acks=1).error_code == INVALID_RECORD
        assert c.produce(topic, 0, make_batch([b"v"], keys=[b"k"]), acks=1).error_code == NONE
        code, message = incremental(c, 1, "", [("log.cleanup.policy", SET, "shred")])
        assert code == INVALID_REQUEST and message.startswith("Invalid value shred for configuration log.cleanup.policy")
        assert incremental(c, 1, "", [("log.cleanup.policy", DELETE, None)]) == (NONE, None)
        assert topic_config(c, topic, "cleanup.policy") == ("delete", DEFAULT_CONFIG, [])
        assert c.produce(topic, 0, make_batch([b"no key"]), acks=1).error_code == NONE
