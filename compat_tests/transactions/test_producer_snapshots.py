"""A restarted broker loads each partition's producer state from its snapshot, both layouts:
after SIGTERM it replays no batch header, after kill -9 only those past the newest snapshot,
and in both cases it knows the producers it knew (DescribeProducers, a resent batch taken as a
duplicate, an open transaction holding the last stable offset)."""

from __future__ import annotations

import re
import time

from compat_tests.helpers.probing import delete_topic
from compat_tests.helpers.producer_state import NONE, describe, produce
from compat_tests.helpers.raw_kafka import Client
from compat_tests.helpers.topics import unique_topic
from compat_tests.helpers.txn_markers import producer_id
from wire.batch_builder import build_batch

REPLAYED = re.compile(r"(\S+): producer state from the snapshot at (-?\d+) and (\d+) batch headers past it")


def snapshot_offsets(broker, topic: str) -> list[int]:
    """The offsets of partition 0's snapshot files, in either layout's partition directory."""
    directory = broker.data_dir / f"{topic}-0"
    if not directory.exists():
        directory = broker.data_dir / "commitlog-store" / "consumequeue" / topic / "0"
    return sorted(int(p.name.split(".")[0]) for p in directory.glob("*.snapshot"))


def loads(text: str, topic: str) -> list[tuple[int, int]]:
    """(snapshot offset, headers replayed) of each load of `topic`'s partition 0 in the log text."""
    return [(int(at), int(n)) for name, at, n in REPLAYED.findall(text) if name == f"{topic}-0"]


def test_restarts_replay_only_what_no_snapshot_covers(fresh_broker):
    topic = unique_topic("snapshots")
    with Client.to(fresh_broker) as client:
        client.create_topic(topic)
        idempotent, transactional = producer_id(client), producer_id(client)
        ts = int(time.time() * 1000)
        for seq in range(20):
            produce(client, topic, idempotent, seq, [b"v"], ts + seq)
        produce(client, topic, transactional, 0, [b"t"], ts + 20, transactional=True)  # offset 20, left open
        before = describe(client, topic, [0])
    since = fresh_broker.log_size()
    fresh_broker.stop()
    assert snapshot_offsets(fresh_broker, topic)[-1] == 21  # the shutdown's, at the log end
    fresh_broker.start()
    assert loads(fresh_broker.log_text(since), topic) == []  # the line is written only for a replay
    with Client.to(fresh_broker) as client:
        assert describe(client, topic, [0]) == before
        resent = build_batch([(None, b"v")], ts + 19, (idempotent, 0, 19))
        assert client.produce(topic, 0, bytes(resent)).base_offset == 19  # the duplicate's first answer
        for seq in range(20, 25):
            produce(client, topic, idempotent, seq, [b"v"], ts + seq)
        after = describe(client, topic, [0])
    since = fresh_broker.log_size()
    fresh_broker.kill()
    newest = snapshot_offsets(fresh_broker, topic)[-1]  # the shutdown's at 21, or a later round's
    assert newest >= 21
    fresh_broker.start()
    assert loads(fresh_broker.log_text(since), topic) == ([(newest, 26 - newest)] if newest < 26 else [])
    with Client.to(fresh_broker) as client:
        assert describe(client, topic, [0]) == after
        assert after[0][0] == NONE and any(p[5] == 20 for p in after[0][1])  # the open transaction
        fetched = client.fetch(topic, 0, 0)
        assert fetched.last_stable_offset == 20


def test_a_deleted_topic_is_not_snapshotted(fresh_broker):
    """A topic written and deleted before the next snapshot round: the round (here the one a
    clean shutdown takes) skips it, where it once read the deleted log and failed."""
    topic = unique_topic("snapshot-deleted")
    with Client.to(fresh_broker) as client:
        client.create_topic(topic)
        produce(client, topic, producer_id(client), 0, [b"v"], int(time.time() * 1000))
        assert delete_topic(client, topic) == 0
    since = fresh_broker.log_size()
    assert fresh_broker.stop() == 0
    assert "Traceback" not in fresh_broker.log_text(since)
