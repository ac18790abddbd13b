"""Log-dir cordoning (KIP-1066, Kafka 4.3; broker/settings/cordoned_log_dirs.py) on a real broker:
cordoned.log.dirs set on the broker's id names dirs DescribeLogDirs v5 then answers is_cordoned
for; AlterReplicaLogDirs into a cordoned dir is INVALID_REPLICA_ASSIGNMENT; with every dir
cordoned, CreateTopics and CreatePartitions are INVALID_REPLICATION_FACTOR while the topics
already there keep taking records; uncordoned, everything works again. Bad values get Kafka's
INVALID_REQUEST messages."""

from __future__ import annotations

from compat_tests.helpers.broker_configs import (
    DELETE, DYNAMIC_BROKER_CONFIG, INVALID_REQUEST, NODE, NONE, SET, described, incremental)
from compat_tests.helpers.log_dirs import alter, dir_of, other
from compat_tests.helpers.raw_kafka import Client, make_batch
from compat_tests.helpers.topics import unique_topic

INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT = 38, 39
CORDONED = "cordoned.log.dirs"


def cordoned_dirs(c: Client) -> dict[str, bool]:
    r = c.request(35, 5, topics=None)
    return {res.log_dir: res.is_cordoned for res in r.results}


def create_code(c: Client, topic: str) -> int:
    (t,) = c.request(19, 7, topics=[{"name": topic, "num_partitions": 1, "replication_factor": -1,
                                     "assignments": [], "configs": []}], validate_only=False, timeout=10_000).topics
    return t.error_code


def add_partitions_code(c: Client, topic: str) -> int:
    (r,) = c.request(37, 3, topics=[{"name": topic, "count": 2, "assignments": None}], timeout=10_000,
                     validate_only=False).results
    return r.error_code


def test_cordoning_log_dirs(fresh_broker, storage_mode):
    here, there = dir_of(fresh_broker, storage_mode), dir_of(fresh_broker, other(storage_mode))
    topic = unique_topic("cordon")
    with Client.to(fresh_broker) as c:
        c.create_topic(topic)
        assert cordoned_dirs(c) == {here: False, there: False}

        # the other layout's dir: listed cordoned, and no replica may move into it
        assert incremental(c, 1, NODE, [(CORDONED, SET, there)]) == (NONE, None)
        assert cordoned_dirs(c) == {here: False, there: True}
        assert described(c, NODE)[CORDONED][:2] == (there, DYNAMIC_BROKER_CONFIG)
        assert alter(c, there, topic) == {0: INVALID_REPLICA_ASSIGNMENT}
        assert create_code(c, unique_topic("cordon-one-open")) == NONE  # a dir is still open

        # every dir: no new topic or partition, the existing topic still takes records
        assert incremental(c, 1, NODE, [(CORDONED, SET, "*")]) == (NONE, None)
        assert cordoned_dirs(c) == {here: True, there: True}
        assert create_code(c, unique_topic("cordon-refused")) == INVALID_REPLICATION_FACTOR
        assert add_partitions_code(c, topic) == INVALID_REPLICATION_FACTOR
        assert c.produce(topic, 0, make_batch([b"still"]), acks=-1).error_code == NONE

        # Kafka's refusals
        code, message = incremental(c, 1, NODE, [(CORDONED, SET, f"{here},/no/such/dir")])
        assert (code, message) == (INVALID_REQUEST, f"Invalid value [{here}, /no/such/dir] for configuration "
                                   f"{CORDONED}: Invalid entry in {CORDONED}: /no/such/dir. All cordoned log dirs "
                                   "must be entries of log.dirs or log.dir.")
        assert incremental(c, 1, "", [(CORDONED, SET, "*")]) == (
            INVALID_REQUEST, f"Cannot update these configs at default cluster level, broker id must be specified: "
                             f"Set({CORDONED})")

        # uncordoned: placement and moves again
        assert incremental(c, 1, NODE, [(CORDONED, DELETE, None)]) == (NONE, None)
        assert cordoned_dirs(c) == {here: False, there: False}
        assert create_code(c, unique_topic("cordon-again")) == NONE
        assert add_partitions_code(c, topic) == NONE
        assert alter(c, there, topic) == {0: NONE}
