"""`--flush-interval-ms` (Kafka's log.flush.interval.ms): appended data is fsynced within one
interval, whatever the producer's acks, and the engine's checkpoint records how far.

What is observable from outside without pulling the power: the engine's recovery checkpoint,
which a flush advances and which otherwise is only written at shutdown. The segment engine keeps
Kafka's `recovery-point-offset-checkpoint`; the commitlog engine the durable commitlog position
in its `checkpoint` file.
"""

from __future__ import annotations

import socket

from compat_tests.helpers.broker_process import BrokerProcess
from compat_tests.helpers.raw_kafka import REF, Client, build_request, make_batch, read_records
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.waiting import holds_throughout, wait_until
from segment.kafka.store import RECOVERY_CHECKPOINT, read_checkpoint


def on_disk(broker, topic: str) -> bool:
    """Whether the engine's checkpoint says the ten records of `topic`-0 are fsynced."""
    if broker.storage_mode == "segment":
        return read_checkpoint(broker.data_dir / RECOVERY_CHECKPOINT).get((topic, 0)) == 10
    from segment.rocket.checkpoint import read_checkpoint as read_rocket_checkpoint
    from segment.rocket.store import STORE_DIR

    # The broker is fresh and this topic its only one: the commitlog holds nothing else, so any
    # durable position past 0 covers the produced unit.
    return read_rocket_checkpoint(broker.data_dir / STORE_DIR).flushed > 0


def produce_ten(broker) -> str:
    topic = unique_topic("flush")
    with Client.to(broker) as c:
        c.create_topic(topic, 1)
        p = c.produce(topic, 0, make_batch([b"r%d" % i for i in range(10)]), acks=1)
        assert p.error_code == 0 and p.base_offset == 0, p
    return topic


def test_periodic_flush_advances_the_checkpoint(broker_factory):
    broker = broker_factory("--flush-interval-ms", "100")
    topic = produce_ten(broker)
    wait_until(lambda: on_disk(broker, topic), f"the checkpoint covering {topic}-0 (a 100 ms flush interval)",
               timeout=5, interval=0.05)


def test_without_periodic_flush_the_checkpoint_waits_for_shutdown(broker_factory):
    broker = broker_factory()
    topic = produce_ten(broker)
    # Ten times the interval the test above sees the checkpoint move within.
    holds_throughout(1.0, lambda: not on_disk(broker, topic), "the checkpoint unmoved before shutdown")
    broker.stop()
    assert on_disk(broker, topic)


def test_the_commitlog_checkpoints_in_the_background_once_a_commitlog_file_of_units_is_written(tmp_path):
    """No flush.ms, no flush.messages: the commitlog store still checkpoints its queues, in the
    background, once units filling a commitlog file were dispatched since the last checkpoint
    (segment/rocket/store.py), so a crash re-dispatches about a file at most. Before the write
    path, only a flush or shutdown checkpointed it."""
    from segment.rocket.checkpoint import read_checkpoint as read_rocket_checkpoint
    from segment.rocket.store import STORE_DIR

    broker = BrokerProcess(storage_mode="commitlog", workdir=tmp_path / "broker",
                           extra_args=["--commitlog-file-bytes", str(1 << 20)])
    try:
        broker.start()
        topic = unique_topic("ckpt")
        with Client.to(broker) as c:
            c.create_topic(topic, 1)
            for _ in range(24):  # 24 x 64 KiB: past one 1 MiB commitlog file
                assert c.produce(topic, 0, make_batch([b"x" * 65_536]), acks=1).error_code == 0
        wait_until(lambda: read_rocket_checkpoint(broker.data_dir / STORE_DIR).commitlog >= 1 << 20,
                   "a background checkpoint past the first commitlog file", timeout=15)
    finally:
        broker.cleanup()


def _produce_request(topic: str, records: bytes, acks: int = -1):
    return build_request(0, REF["produce"], transactional_id=None, acks=acks, timeout=10_000,
                         topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": records}]}])


def test_pipelined_durable_produces_are_answered_in_order_and_visible_at_once(fresh_broker):
    """flush.messages=1: 40 produce requests sent back to back on one connection (as librdkafka
    pipelines them) are appended while earlier ones wait for their fsync. Each answer comes in
    request order with the next offsets, and a ListOffsets sent right behind them on the same
    connection already sees all 400 records (its answer waits for theirs)."""
    topic = unique_topic("pipelined")
    with Client.to(fresh_broker) as c:
        c.create_topic(topic, 1, {"flush.messages": "1"})
        ids = [c.send(_produce_request(topic, make_batch([b"p%d-%d" % (i, j) for j in range(10)])))
               for i in range(40)]
        cid = c.send(build_request(2, REF["list_offsets"], replica_id=-1, isolation_level=0, topics=[
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}]))
        for i, expected_id in enumerate(ids):
            resp = c.recv(0, REF["produce"], expected_id)
            (p,) = resp.responses[0].partition_responses
            assert (p.error_code, p.base_offset) == (0, 10 * i), p
        (latest,) = c.recv(2, REF["list_offsets"], cid).topics[0].partitions
        assert (latest.error_code, latest.offset) == (0, 400), latest
        values = [v for _o, _t, _k, v in read_records(c.stored_bytes(topic))]
        assert values == [b"p%d-%d" % (i, j) for i in range(40) for j in range(10)]


def test_client_leaving_mid_fsync_loses_no_acknowledged_visibility(fresh_broker):
    """A durable producer that closes its connection with answers still owed: what it appended
    is still published once fsynced, so another client reads all of it."""
    topic = unique_topic("leaving")
    with Client.to(fresh_broker) as c:
        c.create_topic(topic, 1, {"flush.messages": "1"})
        for i in range(20):
            c.send(_produce_request(topic, make_batch([b"l%d" % i])))
        # its end of the stream first, then the broker's (a close with answers unread is a reset,
        # which drops the requests the broker has not read from its socket yet)
        c.sock.shutdown(socket.SHUT_WR)
        assert c.closed_by_peer()
    with Client.to(fresh_broker) as reader:
        wait_until(lambda: reader.log_end_offset(topic) == 20, "the records appended before the client left visible")
        values = [v for _o, _t, _k, v in read_records(reader.stored_bytes(topic))]
        assert values == [b"l%d" % i for i in range(20)]
