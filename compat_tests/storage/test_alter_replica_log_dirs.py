"""AlterReplicaLogDirs: a partition's replica moved live between the two layouts' log dirs.

Runs once per broker default (the storage_mode fixture): the topic starts in the default layout
and moves to the other, so both directions are covered. An idempotent acks=all producer (and a
consumer) keep going through the move; every acknowledged record must then be in the new
layout once, in order, at its offset, the old files gone, and a restart must read it back.
kill -9 at seeded moments of a move must leave every acknowledged record and one layout.
A health probe's longest wait during a move of 300 MB stays under PROBE_BOUND_S: the copy and
its fsyncs keep off the event loop but for one chunk a turn (FINDINGS.md has the figures).
"""

from __future__ import annotations

import random
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from broker.key_topic import name_for
from compat_tests.helpers.log_dirs import (
    ALTER_DIRS, DESCRIBE_DIRS, LOG_DIR_NOT_FOUND, NONE, UNKNOWN_TOPIC_OR_PARTITION, IdempotentLoad, alter, dir_of,
    files_of, other, placement, prefill)
from compat_tests.helpers.probing import probing
from compat_tests.helpers.raw_kafka import Client, make_batch, read_records
from compat_tests.helpers.served_versions import over_versions
from compat_tests.helpers.stall_bounds import within_bound_once
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import wait_until
from wire.protocol import SERVED_VERSIONS

# Before the catch-up ran to the log's end, the commit copied ~all of the log on the loop: the
# broker's part of a probe's wait (stall_bounds.probe_wait) grew with it: 0.35-0.72 s for 300 MB
# (0.22-0.49 s for 200 MB, too close to noise to tell); 6-17 ms since
PROBE_BOUND_S, PROBED_MB = 0.2, 300


def stored(c: Client, topic: str) -> list[tuple[int, bytes]]:
    out, offset = [], 0
    end = c.log_end_offset(topic)
    while offset < end:
        p = c.fetch(topic, 0, offset)
        assert p.error_code == NONE, p
        got = [(o, v) for o, _t, _k, v in read_records(p.records) if o >= offset]
        assert got, f"no records at {offset} below {end}"
        out.extend(got)
        offset = got[-1][0] + 1
    return out


def assert_all_acked(c: Client, topic: str, acked: list[tuple[int, bytes]]) -> None:
    by_offset = dict(stored(c, topic))
    assert [o for o in sorted(by_offset)] == list(range(min(by_offset), min(by_offset) + len(by_offset)))
    missing = [(o, v[:20]) for o, v in acked if by_offset.get(o) != v]
    assert not missing, f"{len(missing)} acknowledged records not at their offsets, e.g. {missing[:3]}"
    values = [v for v in by_offset.values()]
    assert len({v for _o, v in acked} & set(values)) == len(acked)  # each once (values are unique)


@over_versions(ALTER_DIRS)
def test_versions_and_errors(fresh_broker, storage_mode, version):
    topic = unique_topic("ald-err")
    with Client.to(fresh_broker) as c:
        c.create_topic(topic, 1)
        here = dir_of(fresh_broker, storage_mode)
        # Its own dir: a no-op success; nothing moves.
        assert alter(c, here, topic, version=version) == {0: NONE}
        assert placement(c, topic) == {(here, False): 0}
        assert alter(c, "/no/such/dir", topic, version=version) == {0: LOG_DIR_NOT_FOUND}
        assert alter(c, "relative/dir", topic, version=version) == {0: LOG_DIR_NOT_FOUND}
        assert alter(c, here, topic, partitions=(0, 7), version=version) == {0: NONE, 7: UNKNOWN_TOPIC_OR_PARTITION}
        assert alter(c, here, unique_topic("ald-none"), version=version) == {0: UNKNOWN_TOPIC_OR_PARTITION}
    assert files_of(fresh_broker, topic) == {storage_mode: True, other(storage_mode): False}


def test_the_other_layouts_dir_is_listed_before_anything_is_in_it(fresh_broker, storage_mode):
    """Kafka's DescribeLogDirs lists every dir of log.dirs, empty or not: a user reads there the
    path to move a partition to, before any partition is in it (the commitlog dir was listed
    only once a commitlog topic existed)."""
    target = dir_of(fresh_broker, other(storage_mode))
    with Client.to(fresh_broker) as c:
        r = c.request(DESCRIBE_DIRS, SERVED_VERSIONS[DESCRIBE_DIRS][1], topics=None)
        listed = {res.log_dir: res for res in r.results}
        assert set(listed) == {dir_of(fresh_broker, "segment"), dir_of(fresh_broker, "commitlog")}
        empty = listed[target]
        assert (empty.error_code, empty.topics, empty.is_cordoned) == (NONE, (), False)
        assert empty.total_bytes >= empty.usable_bytes > 0  # the volume it will be made on
        topic = unique_topic("ald-listed")
        c.create_topic(topic, 1)
        assert alter(c, target, topic) == {0: NONE}
        wait_until(lambda: placement(c, topic) == {(target, False): 0}, "the partition in the listed dir")


MOVE_MIB, MOVE_MIB_PER_S = 40, 10


def test_move_under_load_keeps_every_acked_record(broker_factory, storage_mode):
    """A throttled move (replica.alter.log.dirs.io.max.bytes.per.second): unthrottled, a quiet
    machine moves the 40 MiB in ~0.1 s, between DescribeLogDirs polls; at 10 MiB/s it takes
    about 4 s, so the future replica must show."""
    fresh_broker = broker_factory("--replica-alter-log-dirs-io-max-bytes-per-second", str(MOVE_MIB_PER_S << 20))
    topic, target = unique_topic("ald-move"), other(storage_mode)
    with Client.to(fresh_broker) as c:
        c.create_topic(topic, 1)
        prefill(c, topic, MOVE_MIB)
        # paced to ~1 MB/s, below the throttle: a move slower than the producers never catches up
        load = IdempotentLoad(fresh_broker.bootstrap, topic, "move", pause_s=0.001)
        consumer = Consumer({"bootstrap.servers": fresh_broker.bootstrap, "group.id": topic,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 2})
        consumer.assign([TopicPartition(topic, 0, 0)])
        consumed: list[int] = []
        wait_until(lambda: load.count() > 200, "acks before the move")
        started, acked_before = time.monotonic(), load.count()
        assert alter(c, dir_of(fresh_broker, target), topic) == {0: NONE}
        seen_future = False
        new_place = {(dir_of(fresh_broker, target), False): 0}

        def moved() -> bool:
            nonlocal seen_future
            msg = consumer.poll(0.05)
            if msg is not None and msg.error() is None:
                consumed.append(msg.offset())
            where = placement(c, topic)
            seen_future |= (dir_of(fresh_broker, target), True) in where
            return set(where) == set(new_place)
        wait_until(moved, "the partition in the new log dir alone", timeout=120)
        took = time.monotonic() - started
        assert seen_future, "DescribeLogDirs never showed the future replica"
        # the throttle held: the catch-up copied the prefill (less its last 1 MiB chunk) no faster
        assert took >= (MOVE_MIB - 1) / MOVE_MIB_PER_S, f"{MOVE_MIB} MiB moved in {took:.2f} s"
        assert load.count() > acked_before, "no produce was acknowledged during the move"
        wait_until(lambda: load.count() > acked_before + 200, "acks after the move")
        acked = load.finish()
        def consumed_all() -> bool:
            while (msg := consumer.poll(0.1)) is not None:
                if msg.error() is None:
                    consumed.append(msg.offset())
            return bool(consumed) and consumed[-1] >= acked[-1][0]
        wait_until(consumed_all, "the consumer at the last acknowledged offset", timeout=60)
        consumer.close()
        assert consumed == sorted(set(consumed)) and consumed[0] == 0  # in order, each once
        assert_all_acked(c, topic, acked)
    print(f"moved {storage_mode}->{target} with ~{MOVE_MIB} MiB in {took:.2f} s under load")
    wait_until(lambda: files_of(fresh_broker, topic) == {target: True, storage_mode: False}, "old files removed")
    fresh_broker.kill()
    fresh_broker.start()
    with Client.to(fresh_broker) as c:
        assert placement(c, topic) == {(dir_of(fresh_broker, target), False): 0}
        assert_all_acked(c, topic, acked)
    assert files_of(fresh_broker, topic) == {target: True, storage_mode: False}


def test_probe_answers_during_a_move(fresh_broker, storage_mode):
    target = other(storage_mode)
    prefix = unique_topic("ald-probe")
    with Client.to(fresh_broker) as c:
        def attempt(number: int) -> float:
            topic = f"{prefix}-{number}"
            c.create_topic(topic, 1)
            prefill(c, topic, PROBED_MB)
            waits: list[float] = []
            with probing(fresh_broker, waits):
                assert alter(c, dir_of(fresh_broker, target), topic) == {0: NONE}
                wait_until(lambda: set(placement(c, topic)) == {(dir_of(fresh_broker, target), False)},
                           "the partition in the new log dir alone", timeout=120)
            print(f"\n{storage_mode}->{target}: {PROBED_MB} MB moved, longest probe wait {max(waits) * 1000:.0f} ms "
                  f"over {len(waits)}")
            return max(waits)

        within_bound_once(attempt, PROBE_BOUND_S, f"a probe during a {PROBED_MB} MB move")


@pytest.mark.parametrize("moment", ["before-catch-up", "during", "seeded-1", "seeded-2", "at-swap"])
def test_kill_9_during_a_move_loses_nothing(fresh_broker, storage_mode, moment):
    topic, target = unique_topic("ald-kill"), other(storage_mode)
    with Client.to(fresh_broker) as c:
        c.create_topic(topic, 1)
        prefill(c, topic, 30)
        load = IdempotentLoad(fresh_broker.bootstrap, topic, moment)
        wait_until(lambda: load.count() > 100, "acks before the move")
        since = fresh_broker.log_size()
        assert alter(c, dir_of(fresh_broker, target), topic) == {0: NONE}
        if moment == "during":  # the future replica is made: its log line, read as it appears
            # (DescribeLogDirs once missed a whole 110 ms move between two of its polls)
            wait_until(lambda: "moving " in fresh_broker.log_text(since), "the move's start", interval=0.005)
        elif moment.startswith("seeded"):
            time.sleep(random.Random(moment).uniform(0.05, 0.6))  # a seeded point in the move, not a wait
        elif moment == "at-swap":
            wait_until(lambda: "moved " in fresh_broker.log_text(since), "the swap", timeout=120, interval=0.005)
    fresh_broker.kill()
    acked = load.finish(killed=True)
    fresh_broker.start()
    with Client.to(fresh_broker) as c:
        (where,) = placement(c, topic)  # one live replica, no future after a restart
        assert not where[1]
        assert_all_acked(c, topic, acked)
    mode = storage_mode if where[0] == dir_of(fresh_broker, storage_mode) else target
    wait_until(lambda: files_of(fresh_broker, topic) == {mode: True, other(mode): False}, "exactly one layout")


def test_key_lookup_follows_the_partition_between_layouts(fresh_broker, storage_mode):
    """The key-lookup topic (broker/key_topic.py) serves a partition from the commitlog's key
    index only while the partition is held in the commitlog layout. Moved out, it answers
    UNKNOWN_TOPIC_OR_PARTITION, not the records the shared commitlog keeps of it until retention;
    moved in, every record carrying the key is found, those the catch-up copied included."""
    topic, target = unique_topic("ald-key"), other(storage_mode)
    key_topic = name_for(topic, b"k")

    def by_key(c: Client, partition: int) -> tuple[int, list[bytes]]:
        p = c.fetch(key_topic, partition, 0)
        return p.error_code, [v for _, _, _, v in read_records(p.records)]

    with Client.to(fresh_broker) as c:
        c.create_topic(topic, 2)
        for partition in (0, 1):
            c.produced(topic, partition, make_batch([b"a", b"b", b"c"], keys=[b"k", b"other", b"k"]))
        keyed = {"commitlog": (NONE, [b"a", b"c"]), "segment": (UNKNOWN_TOPIC_OR_PARTITION, [])}
        if storage_mode == "commitlog":
            assert by_key(c, 0) == by_key(c, 1) == keyed["commitlog"]
        assert alter(c, dir_of(fresh_broker, target), topic) == {0: NONE}
        wait_until(lambda: set(placement(c, topic)) == {(dir_of(fresh_broker, target), False)},
                   "partition 0 in the new log dir alone", timeout=60)
        assert by_key(c, 0) == keyed[target]
        assert by_key(c, 1) == keyed[storage_mode]
